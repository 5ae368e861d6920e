"""What one harvester's logs say about one PanDA queue, by its latest record: fetching,
submission and the worker adjuster. The failed calls (host-wide) are in `failed_calls`, the
harvester database's parts in `queue_workers`, the one-line explanation in `why`, the
tables' markup in `queue_rows`.

Every figure keeps its time, and each part names the record section it came from, so a
reader can tell a fresh count from a value the reporter carried over from hours ago.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Optional

from clusterwatch.monitor.core.stamps import Stamp, stamp
from clusterwatch.monitor.record.host_record import HostRecord
from clusterwatch.monitor.record.logs import AdjusterLimit, FetchQueue, SubmitQueue, WorkerPush

PUSHES_SHOWN = 20


@dataclass(frozen=True)
class LastFetch:
    at: Optional[Stamp]
    label: Optional[str]
    asked: Optional[int]
    got: Optional[int]
    outcome: str
    error_class: Optional[str]

    @property
    def failed(self) -> bool:
        # The reporter sets a class exactly when the outcome is a failure; "no jobs in
        # PanDA" is an answer, not a failure.
        return self.error_class is not None

    @property
    def no_jobs(self) -> bool:
        return not self.failed and self.outcome != "OK"


@dataclass(frozen=True)
class Fetching:
    source: str
    error: Optional[str]
    present: bool
    attempts: int
    failed: int
    errors: list[tuple[str, int]]
    jobs_asked: Optional[int]
    jobs_got: Optional[int]
    last: Optional[LastFetch]
    last_got_jobs: Optional[Stamp]
    # Telemetry 1.9: the first failure after the last success, while the latest attempt
    # failed (the streak may have begun in an earlier interval); None for older records.
    failing_since: Optional[Stamp] = None
    failing_errors: tuple[tuple[str, int], ...] = ()

    @property
    def all_failed(self) -> bool:
        return self.attempts > 0 and self.failed >= self.attempts


@dataclass(frozen=True)
class Push:
    at: Optional[Stamp]
    workerid: Optional[int]
    pandaid: Optional[int]


@dataclass(frozen=True)
class Submission:
    source: str
    error: Optional[str]
    present: bool
    workers_submitted: Optional[int]
    submit_failures: Optional[int]
    workers_status: list[tuple[str, Optional[int]]]
    workers_status_at: Optional[Stamp]
    job_chunks: Optional[int]
    job_chunks_at: Optional[Stamp]
    pushes: list[Push]


@dataclass(frozen=True)
class Adjustment:
    source: str
    error: Optional[str]
    present: bool
    at: Optional[Stamp]
    limit: Optional[int]
    limit_name: Optional[str]
    against: list[tuple[str, str]]
    message: Optional[str]


def _quoted(queue: str) -> str:
    return queue.replace("\\", "\\\\").replace('"', '\\"')


def fetching(record: HostRecord, queue: str, now: dt.datetime) -> Fetching:
    section = record.fetching
    queues = section.queues or {}
    entry = queues.get(queue) or FetchQueue()
    last = entry.last
    return Fetching(
        source=f'fetching.queues["{_quoted(queue)}"]',
        error=section.error or section.read.error,
        present=queue in queues,
        attempts=entry.attempts or 0,
        failed=entry.failed or 0,
        errors=list(entry.errors),
        jobs_asked=entry.jobs_asked,
        jobs_got=entry.jobs_got,
        last=None if last is None else LastFetch(
            at=stamp(last.at, now),
            label=last.label,
            asked=last.asked,
            got=last.got,
            outcome=last.outcome or "(no outcome)",
            error_class=last.error_class,
        ),
        last_got_jobs=stamp(entry.last_got_jobs_at, now),
        failing_since=stamp(entry.failing_since, now),
        failing_errors=entry.failing_errors,
    )


def _newest_first(pushes: Iterable[WorkerPush]) -> list[WorkerPush]:
    """Newest first; a push without a readable time (no valid record has one) last."""
    return sorted(pushes, key=lambda push: (push.at is not None, push.at or dt.datetime.min),
                  reverse=True)


def submission(record: HostRecord, queue: str, now: dt.datetime) -> Submission:
    section = record.submission
    queues = section.queues or {}
    entry = queues.get(queue) or SubmitQueue()
    status = entry.workers_status
    ours = _newest_first(push for push in section.recent_pushes if push.queue == queue)
    return Submission(
        source=f'submission.queues["{_quoted(queue)}"]',
        error=section.error or section.read.error,
        present=queue in queues,
        workers_submitted=entry.workers_submitted,
        submit_failures=entry.submit_failures,
        workers_status=status.pairs() if status is not None else [],
        workers_status_at=stamp(entry.workers_status_at, now),
        job_chunks=entry.job_chunks,
        job_chunks_at=stamp(entry.job_chunks_at, now),
        pushes=[Push(stamp(push.at, now), push.workerid, push.pandaid)
                for push in ours[:PUSHES_SHOWN]],
    )


def _against(value: Any) -> list[tuple[str, str]]:
    if isinstance(value, Mapping):
        return [(str(name), "None" if item is None else str(item))
                for name, item in value.items()]
    if value is None:
        return []
    return [("", str(value))]


def adjustment(record: HostRecord, queue: str, now: dt.datetime) -> Adjustment:
    section = record.adjustment
    queues = section.queues or {}
    entry = queues.get(queue) or AdjusterLimit()
    return Adjustment(
        source=f'adjustment.queues["{_quoted(queue)}"]',
        error=section.error or section.read.error,
        present=queue in queues,
        at=stamp(entry.at, now),
        limit=entry.limit,
        limit_name=entry.limit_name,
        against=_against(entry.against),
        message=entry.message,
    )
