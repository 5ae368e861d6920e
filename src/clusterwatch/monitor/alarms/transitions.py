"""Open and recover decisions: pure, from the open alarms and this run's observations.

- FIRING with nothing open opens an alarm (an `alert` event); FIRING on an open alarm whose
  message changed only updates it (no event: the condition is the same incident).
- CLEAR recovers an open alarm only on evidence newer than the record that raised it, so
  the record that raised it (read again under another threshold, say) never clears it.
- UNKNOWN, and no observation at all, leave everything as it is.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Optional

from clusterwatch.monitor.alarms.observation import AlarmState, Observation
from clusterwatch.notify.incident import ALARM_ID_BYTES, Action, incident_id


class Change(enum.Enum):
    """What a run does to one alarm; a sent one's value is its event's action word."""

    ALERT = "alert"  # opens it
    RECOVER = "recover"  # closes it
    UPDATE = "update"  # the monitor's own: a changed message of an open alarm, never sent

    @property
    def sent_as(self) -> Optional[Action]:
        """The action of the outbox event it queues; None for an update."""
        return None if self is Change.UPDATE else Action(self.value)


@dataclass(frozen=True)
class OpenAlarm:
    target: str
    incident: str
    status: str
    detail: str
    opened_at: float  # epoch seconds
    evidence_at: Optional[float]  # collected_at of the record that raised it
    alert_held: bool = False  # its alert is held back (a silence or window): not sent yet


@dataclass(frozen=True)
class Transition:
    action: Change
    target: str
    status: str
    detail: str
    incident: str
    evidence_at: Optional[float]


def is_newer(evidence_at: Optional[float], raised_on: Optional[float]) -> bool:
    if evidence_at is None:
        return False
    return raised_on is None or evidence_at > raised_on


def decide(
    open_alarms: Mapping[str, OpenAlarm], observations: Mapping[str, Observation], now: float
) -> list[Transition]:
    """The transitions of one run, in target order (stable messages, stable tests)."""
    transitions: list[Transition] = []
    for name in sorted(observations):
        seen = observations[name]
        current = open_alarms.get(name)
        if seen.state is AlarmState.FIRING:
            if current is None:
                incident = incident_id(name, now, digest_bytes=ALARM_ID_BYTES)
                transitions.append(Transition(Change.ALERT, name, seen.status, seen.detail,
                                              incident, seen.evidence_at))
            elif (seen.status, seen.detail) != (current.status, current.detail):
                transitions.append(Transition(Change.UPDATE, name, seen.status, seen.detail,
                                              current.incident, current.evidence_at))
        elif (seen.state is AlarmState.CLEAR and current is not None
              and is_newer(seen.evidence_at, current.evidence_at)):
            transitions.append(Transition(Change.RECOVER, name, seen.status, seen.detail,
                                          current.incident, seen.evidence_at))
    return transitions
