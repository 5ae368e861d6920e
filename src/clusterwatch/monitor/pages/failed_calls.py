"""Failed calls to the PanDA server, as the hosts overview and the queue page both show them:
per daemon, host-wide (not per queue), each with its last log line and that line's time."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional

from clusterwatch.monitor.core.stamps import Stamp, stamp
from clusterwatch.monitor.record.host_record import HostRecord


@dataclass(frozen=True)
class FailedCalls:
    """One daemon's failed calls in the record's interval."""

    daemon: str
    source: str
    error: Optional[str]  # why its log could not be read
    failed: Optional[int]
    by_call_and_class: list[tuple[str, int]]
    last_line: Optional[str]
    last_at: Optional[Stamp]


def failed_calls(record: HostRecord, now: dt.datetime) -> list[FailedCalls]:
    """Every daemon's, in `CALL_DAEMONS` order."""
    found = []
    for daemon, calls in record.failed_calls.by_daemon():
        last = calls.last
        found.append(FailedCalls(
            daemon=daemon,
            source=f"failed_calls.{daemon}",
            error=calls.error or calls.read.error,
            failed=calls.failed,
            by_call_and_class=list(calls.by_call_and_class),
            last_line=last.line if last else None,
            last_at=stamp(last.at if last else None, now),
        ))
    return found


def last_failed_call(calls: Sequence[FailedCalls]) -> Optional[FailedCalls]:
    """The most recent failed call of either daemon: the line that says why."""
    dated = [call for call in calls if call.last_line and call.last_at is not None]
    if not dated:
        return None
    return min(dated, key=lambda call: call.last_at.age_s if call.last_at else 0.0)
