"""Which alarms' deliveries are held (silences, maintenance windows), and what a run sends.

Pure: the engine reads the silences and the windows, this module says, for the run's
transitions and the alarms open before it, which events go to the outbox and which alarms
change their `alert_held` flag. The rules (`notify.silences`): a held alarm still opens and
closes; its alert is left out of the outbox while it is held and appended at the first run
after the hold ends, if it is still open; a recovery is sent only for an alarm whose alert
was sent (so a held alarm that closes closes silently); recoveries are never held.

An alarm's facts for matchers: `key` (its key), `host` (the latest record's hostname, and
its short name), `queue` (the harvester's queues for `panda_unreachable` and
`reporter_stale`, whose outage is its queues': those it fetched or submitted for in the
interval and those its database configures; none for a disk or volume alarm) and
`filesystem` (the mount of a disk alarm, none otherwise). Every kind is present, empty when
the alarm has no value of it, so `key:X filesystem:/data` holds only X's disk alarm of /data.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Optional

from clusterwatch.monitor.alarms.observation import PANDA, STALE, split_target
from clusterwatch.monitor.alarms.rules import KeyFacts
from clusterwatch.monitor.alarms.transitions import Change, OpenAlarm, Transition
from clusterwatch.notify.incident import Action
from clusterwatch.notify.silences import Facts, Hold, Silence, Window, hold_for

KINDS = ("key", "host", "queue", "filesystem")  # what a monitor alarm's matchers may name
QUEUE_CHECKS = (PANDA, STALE)  # the alarms that are about the harvester's queues


def alarm_facts(target: str, facts: Optional[KeyFacts]) -> dict[str, list[str]]:
    """The facts of alarm `target`, from its key's facts (None: a key nothing is known of)."""
    check, key, filesystem = split_target(target)
    record = facts.record if facts is not None else None
    hosts: list[str] = []
    queues: list[str] = []
    if record is not None:
        if record.hostname:
            hosts.append(record.hostname)
            short = record.hostname.split(".", 1)[0]
            if short and short != record.hostname:
                hosts.append(short)
        if check in QUEUE_CHECKS:
            # The database's queues too: a harvester stopped for its maintenance fetches and
            # submits nothing, and its silenced alarm must not be released for that.
            names = (set(record.fetching.queues or {}) | set(record.submission.queues or {})
                     | set(record.harvester_db.launch_limits.entries))
            queues = sorted(names)
    return {"key": [key], "host": hosts, "queue": queues,
            "filesystem": [filesystem] if filesystem is not None else []}


def holder(
    keys: Iterable[KeyFacts], silences: Sequence[Silence], windows: Sequence[Window], now: float
) -> Callable[[str], Optional[Hold]]:
    """`hold(target)`: what holds the alarm `target` now, None when nothing does."""
    by_key = {facts.key: facts for facts in keys}

    def hold(target: str) -> Optional[Hold]:
        if not silences and not windows:
            return None
        found: Facts = alarm_facts(target, by_key.get(split_target(target)[1]))
        return hold_for(found, now, silences, windows)

    return hold


@dataclass(frozen=True)
class Outgoing:
    """One event a run appends to the outbox."""

    action: Action
    target: str
    status: str
    incident: str
    detail: str
    released: bool = False  # an alert held until now


@dataclass
class Routing:
    events: list[Outgoing] = field(default_factory=list)
    held_incidents: set[str] = field(default_factory=set)  # opened this run, held
    released_incidents: set[str] = field(default_factory=set)  # their alert is sent now
    silent_closes: int = 0  # held alarms that closed without a word


def route(
    transitions: Sequence[Transition], open_before: Mapping[str, OpenAlarm],
    hold: Callable[[str], Optional[Hold]],
) -> Routing:
    """What a run sends: its transitions' events less the held ones, then the releases."""
    routing = Routing()
    changed: dict[str, Transition] = {}
    for change in transitions:
        changed[change.target] = change
        if change.action is Change.ALERT:
            if hold(change.target) is not None:
                routing.held_incidents.add(change.incident)
                continue
            routing.events.append(Outgoing(Action.ALERT, change.target, change.status,
                                           change.incident, change.detail))
        elif change.action is Change.RECOVER:
            before = open_before.get(change.target)
            if before is not None and before.alert_held:
                routing.silent_closes += 1
                continue
            routing.events.append(Outgoing(Action.RECOVER, change.target, change.status,
                                           change.incident, change.detail))
    for target in sorted(open_before):
        alarm = open_before[target]
        latest = changed.get(target)
        if not alarm.alert_held or (latest is not None and latest.action is Change.RECOVER):
            continue
        if hold(target) is not None:
            continue
        status, detail = ((latest.status, latest.detail) if latest is not None
                          else (alarm.status, alarm.detail))
        routing.released_incidents.add(alarm.incident)
        routing.events.append(Outgoing(Action.ALERT, target, status, alarm.incident, detail,
                                       released=True))
    return routing
