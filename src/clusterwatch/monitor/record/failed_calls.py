"""The record's `failed_calls` section, typed: the communicator's and the propagator's failed
calls to the PanDA server in the interval, host-wide (not per queue).

Field names are the schema's (`$defs/failed_daemon`; a test holds the two together).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any, Optional

from clusterwatch.monitor.record.logs import LogRead, log_read
from clusterwatch.monitor.record.reading import Counts, counts, error_of, integer, obj, text
from clusterwatch.monitor.record.sections import CALL_DAEMONS
from clusterwatch.monitor.record.times import parse_utc


@dataclass(frozen=True)
class LastCall:
    at: Optional[dt.datetime] = None
    line: Optional[str] = None  # the log line, which names the cause


@dataclass(frozen=True)
class DaemonCalls:
    """One daemon's failed calls to the PanDA server in the interval (`$defs/failed_daemon`):
    host-wide, not per queue."""

    read: LogRead = field(default_factory=LogRead)
    error: Optional[str] = None
    failed: Optional[int] = None
    by_call_and_class: Counts = ()
    last: Optional[LastCall] = None


@dataclass(frozen=True)
class FailedCallsLog:
    communicator: DaemonCalls = DaemonCalls()
    propagator: DaemonCalls = DaemonCalls()

    def by_daemon(self) -> list[tuple[str, DaemonCalls]]:
        """(daemon, its calls) in `CALL_DAEMONS` order."""
        return [(daemon, getattr(self, daemon)) for daemon in CALL_DAEMONS]


_NO_CALLS = DaemonCalls()  # shared: frozen


def _daemon_calls(value: Any) -> DaemonCalls:
    part = obj(value)
    if not part:
        return _NO_CALLS
    last = obj(part.get("last"))
    return DaemonCalls(
        read=log_read(part.get("read")),
        error=error_of(part),
        failed=integer(part.get("failed")),
        by_call_and_class=counts(part.get("by_call_and_class")),
        last=LastCall(parse_utc(last.get("at")), text(last.get("line"))) if last else None,
    )


def failed_calls_log(value: Any) -> FailedCallsLog:
    section = obj(value)
    return FailedCallsLog(communicator=_daemon_calls(section.get("communicator")),
                          propagator=_daemon_calls(section.get("propagator")))
