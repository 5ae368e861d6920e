"""`panda_unreachable`: the harvester's fetches all failing, with one error class.

That is the 2026-10-02 signature (every call `SSLError ... CERTIFICATE_VERIFY_FAILED` after
the server's certificate was renewed). The message carries the error line, because the host
that logged it is one nobody outside can read. Fetches succeeding clear the alarm (for a
1.9 record: a queue whose latest fetch worked); no attempt at all, an unread fetch log, or
failures of several classes say nothing either way, so an open alarm stays open.

Two readings of one rule, one harvester (all its queues) each:

- A record of telemetry 1.9 or later says each queue's streak: `failing_since`, the first
  failure after its last success, set while its latest attempt failed, even when that
  failure was logged in an earlier interval. It fires on the first record whose queues are
  all failing, their latest attempts with one error class, with at least two failures in
  their streaks (or every fetch of the interval failed): a failure that starts
  mid-interval is raised on that interval's record ("failing since" that time), not on the
  next one's, whose fetches would all have failed.
- An older reporter's record (no streak) fires when every fetch of its interval failed
  with one error class, as before.
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
# A streak fires with this many failed attempts (its queues' together), or when every fetch
# of the interval failed (the older rule): a single transient failure is no outage.
MIN_STREAK_FAILURES = 2


def observe_fetching(key: str, record: HostRecord, evidence_at: float) -> Observation:
    """The observation for `panda_unreachable:<key>` (one per harvester, all its queues)."""
    queues = record.fetching.queues
    if queues is None:
        why = record.fetching.error or "no queues"
        return Observation(AlarmState.UNKNOWN, "not read", f"{key}: fetch log not read ({why})",
                           evidence_at)
    if queues and all(_says_streak(queue) for queue in queues.values()):
        return _observe_streaks(key, record, queues, evidence_at)
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
        return _succeeding(key, queues, evidence_at)
    if len(classes) != 1:
        kinds = ", ".join(sorted(classes)) or "no error class recorded"
        return Observation(AlarmState.UNKNOWN, "failing",
                           f"{key}: every fetch failed, not with one error class ({kinds})",
                           evidence_at)
    (error_class,) = classes
    detail = (f"{key}: every fetch failed with {error_class} ({failed} of {attempts}) — "
              f"last error: {_error_line(record, queues, error_class)}")
    return Observation(AlarmState.FIRING, error_class, wording.one_line(detail, DETAIL_CHARS),
                       evidence_at)


def _says_streak(queue: FetchQueue) -> bool:
    """Whether the queue's entry says its streak (telemetry 1.9), consistently with its last
    attempt: failing exactly when that attempt failed. A record where a queue does not is
    read as an older reporter's."""
    last = queue.last
    if last is None or not queue.has_streak:
        return False
    return (queue.failing_since is not None) == (last.error_class is not None)


def _observe_streaks(key: str, record: HostRecord, queues: Mapping[str, FetchQueue],
                     evidence_at: float) -> Observation:
    """A 1.9 record: cut off when every queue's latest attempts failed, the latest with one
    error class; the evidence dates from the first of those failures."""
    since: dict[str, float] = {}
    for name, queue in queues.items():
        if queue.failing_since is None:
            return _succeeding(key, queues, evidence_at)
        since[name] = queue.failing_since.timestamp()
    latest = {queue.last.error_class for queue in queues.values()
              if queue.last is not None and queue.last.error_class}
    streak: Counter[str] = Counter()
    for queue in queues.values():
        for error_class, count in queue.failing_errors:
            if count > 0:
                streak[error_class] += count
    first = min(since.values())
    began = wording.utc(first)
    if len(latest) != 1:
        kinds = ", ".join(sorted(latest)) or "no error class recorded"
        return Observation(AlarmState.UNKNOWN, "failing",
                           f"{key}: every queue failing since {began}, its latest fetches not "
                           f"with one error class ({kinds})", evidence_at)
    (error_class,) = latest
    failures = sum(streak.values())
    attempts = sum(_count(queue.attempts) for queue in queues.values())
    if failures < MIN_STREAK_FAILURES and sum(_count(q.failed) for q in queues.values()) < attempts:
        # One transient failure after fetches that worked is no outage yet; an interval
        # whose one fetch failed fires as it always did.
        return Observation(AlarmState.UNKNOWN, "failing",
                           f"{key}: the latest fetch failed with {error_class} ({began}) after "
                           "fetches that worked: one failure says nothing yet", evidence_at)
    by_class = ", ".join(f"{name} {count}" for name, count in
                         sorted(streak.items(), key=lambda pair: (-pair[1], pair[0])))
    detail = (f"{key}: {_what_failed(queues, error_class)}, failing since {began} "
              f"({failures} failed attempt{'' if failures == 1 else 's'} since: {by_class}) — "
              f"last error: {_error_line(record, queues, error_class)}")
    return Observation(AlarmState.FIRING, error_class, wording.one_line(detail, DETAIL_CHARS),
                       min(first, evidence_at))


def _what_failed(queues: Mapping[str, FetchQueue], error_class: str) -> str:
    """`every fetch failed with SSLError (6 of 6)` when the interval's fetches all failed
    with it (the older rule's words), else what its latest ones say."""
    attempts = sum(_count(queue.attempts) for queue in queues.values())
    failed = sum(_count(queue.failed) for queue in queues.values())
    classes = {name for queue in queues.values() for name, count in queue.errors if count > 0}
    if failed == attempts and classes == {error_class}:
        return f"every fetch failed with {error_class} ({failed} of {attempts})"
    where = (f"of {next(iter(queues))}" if len(queues) == 1
             else f"of all {len(queues)} queues")
    return (f"the latest fetches {where} failed with {error_class} ({failed} of {attempts} "
            "in the interval)")


def _succeeding(key: str, queues: Mapping[str, FetchQueue], evidence_at: float) -> Observation:
    attempts = sum(_count(queue.attempts) for queue in queues.values())
    ok = attempts - sum(_count(queue.failed) for queue in queues.values())
    last_ok = _last_success(queues)
    when = f", last {last_ok}" if last_ok else ""
    return Observation(AlarmState.CLEAR, "fetching",
                       wording.one_line(f"{key}: fetches succeed again ({ok} of {attempts} "
                                        f"OK{when})", DETAIL_CHARS), evidence_at)


def _error_line(record: HostRecord, queues: Mapping[str, FetchQueue], error_class: str) -> str:
    # The reporter keeps the traceback's first line on the error line: noise in a message.
    line = " ".join(_last_error_line(record, queues, error_class).split())
    line = line.removesuffix(TRACEBACK).rstrip()
    return wording.one_line(line, ERROR_LINE_CHARS)


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
