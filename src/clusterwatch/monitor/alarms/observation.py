"""What a rule says about one alarm target, and the settings the rules read."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Optional

# The checks; a target is "<check>:<key>" or "host_disk_space:<key>:<filesystem>".
DISK = "host_disk_space"
STALE = "reporter_stale"
VOLUMES = "volume_reading_missing"
PANDA = "panda_unreachable"
CHECKS = (DISK, STALE, VOLUMES, PANDA)


class AlarmState(enum.Enum):
    """What a rule says of its condition; never stored or sent (the alarm table keeps
    open and closed alarms, the events their action)."""

    FIRING = "firing"  # the condition holds: open an alarm, or keep it open
    CLEAR = "clear"  # the condition does not hold: recover an open alarm (on newer evidence)
    UNKNOWN = "unknown"  # the data cannot tell: leave the alarm as it is, open or not


DETAIL_CHARS = 900  # one message, error line included: fits a Slack line and a log line
ERROR_LINE_CHARS = 500


@dataclass(frozen=True)
class Observation:
    state: AlarmState
    status: str  # a few words for the event and Alertmanager's annotation: "93.1 %", "SSLError"
    detail: str  # the message, starting with the subject: "pandaharvester01 /data: ..."
    # When the evidence was collected (epoch seconds): the record's collected_at, or a
    # token's revocation time. None: no record at all (a key that never reported).
    evidence_at: Optional[float]


@dataclass(frozen=True)
class RuleSettings:
    disk_used_percent: float = 90.0  # a volume at or above this is an alarm
    report_interval_s: float = 300.0  # the reporters' cron interval
    stale_after_intervals: float = 3.0  # silent for more than this many intervals: stale
    never_reported_grace_s: Optional[float] = None  # default: the stale limit

    @property
    def stale_after_s(self) -> float:
        return self.report_interval_s * self.stale_after_intervals

    def stale_after_record_s(self, expected_s: Optional[int]) -> float:
        """The stale limit for a record stating its own run interval (`interval.expected_s`,
        reporters since telemetry 1.3): that many of its intervals, not of the configured."""
        if expected_s is None or expected_s <= 0:
            return self.stale_after_s
        return expected_s * self.stale_after_intervals

    @property
    def grace_s(self) -> float:
        if self.never_reported_grace_s is None:
            return self.stale_after_s
        return self.never_reported_grace_s


def target(check: str, key: str, filesystem: Optional[str] = None) -> str:
    return f"{check}:{key}" if filesystem is None else f"{check}:{key}:{filesystem}"


def split_target(name: str) -> tuple[str, str, Optional[str]]:
    """(check, key, filesystem or None); keys hold no colon, filesystems may."""
    check, _, rest = name.partition(":")
    key, sep, filesystem = rest.partition(":")
    return check, key, (filesystem if sep else None)
