"""`panda_unreachable`: every fetch of the interval failed, all with one error class.

That is the 2026-10-02 signature (every call `SSLError ... CERTIFICATE_VERIFY_FAILED` after
the server's certificate was renewed). The message carries the error line, because the host
that logged it is one nobody outside can read. Some fetches succeeding clears the alarm;
no attempt at all, an unread fetch log, or failures of several classes say nothing either
way, so an open alarm stays open.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Optional

from clusterwatch.monitor.alarms import wording
from clusterwatch.monitor.alarms.observation import (
    DETAIL_CHARS,
    ERROR_LINE_CHARS,
    AlarmState,
    Observation,
)
from clusterwatch.monitor.record.host_record import HostRecord
from clusterwatch.monitor.record.logs import FetchQueue
from clusterwatch.monitor.record.times import utc_text

TRACEBACK = "Traceback (most recent call last):"


def observe_fetching(key: str, record: HostRecord, evidence_at: float) -> Observation:
    """The observation for `panda_unreachable:<key>` (one per harvester, all its queues)."""
    queues = record.fetching.queues
    if queues is None:
        why = record.fetching.error or "no queues"
        return Observation(AlarmState.UNKNOWN, "not read", f"{key}: fetch log not read ({why})",
                           evidence_at)
    attempts = failed = 0
    classes: Counter[str] = Counter()
    for queue in queues.values():
        attempts += _count(queue.attempts)
        failed += _count(queue.failed)
        for error_class, count in queue.errors:
            if count > 0:
                classes[error_class] += count
    if attempts == 0:
        return Observation(AlarmState.UNKNOWN, "no fetches",
                           f"{key}: no fetch attempt in the interval", evidence_at)
    if failed < attempts:
        ok = attempts - failed
        last_ok = _last_success(queues)
        when = f", last {last_ok}" if last_ok else ""
        return Observation(AlarmState.CLEAR, "fetching",
                           wording.one_line(f"{key}: fetches succeed again ({ok} of {attempts} "
                                            f"OK{when})", DETAIL_CHARS), evidence_at)
    if len(classes) != 1:
        kinds = ", ".join(sorted(classes)) or "no error class recorded"
        return Observation(AlarmState.UNKNOWN, "failing",
                           f"{key}: every fetch failed, not with one error class ({kinds})",
                           evidence_at)
    (error_class,) = classes
    # The reporter keeps the traceback's first line on the error line: noise in a message.
    line = " ".join(_last_error_line(record, queues, error_class).split())
    line = line.removesuffix(TRACEBACK).rstrip()
    detail = (f"{key}: every fetch failed with {error_class} ({failed} of {attempts}) — "
              f"last error: {wording.one_line(line, ERROR_LINE_CHARS)}")
    return Observation(AlarmState.FIRING, error_class, wording.one_line(detail, DETAIL_CHARS),
                       evidence_at)


def _count(value: Optional[int]) -> int:
    return value if value is not None and value > 0 else 0


def _last_error_line(
    record: HostRecord, queues: Mapping[str, FetchQueue], error_class: str
) -> str:
    """The communicator's last failed call when it is of this class; else the newest fetch."""
    last = record.failed_calls.communicator.last
    line = last.line if last else None
    if line is not None and error_class in line:
        return line
    newest: Optional[tuple[str, str, str]] = None
    for queue_name, queue in queues.items():
        fetch = queue.last
        if fetch is None or fetch.error_class != error_class or fetch.at is None:
            continue
        at = utc_text(fetch.at)
        if newest is None or at > newest[0]:
            newest = (at, queue_name, fetch.outcome or error_class)
    if newest is not None:
        at, queue_name, outcome = newest
        return f"{at} {queue_name}: {outcome}"
    return "none in the record"


def _last_success(queues: Mapping[str, FetchQueue]) -> Optional[str]:
    """`2026-10-02 18:48:05Z on BNL_PanDA_1` for the newest fetch that did not fail."""
    newest: Optional[tuple[float, str]] = None
    for queue_name, queue in queues.items():
        fetch = queue.last
        if fetch is None or fetch.error_class or fetch.at is None:
            continue
        if newest is None or fetch.at.timestamp() > newest[0]:
            newest = (fetch.at.timestamp(), queue_name)
    if newest is None:
        return None
    return f"{wording.utc(newest[0])} on {newest[1]}"
