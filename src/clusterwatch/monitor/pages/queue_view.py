"""What one harvester's latest record says about one PanDA queue: fetching, submission,
failed calls and the worker adjuster. The database parts are in `queue_db`; the one-line
explanation in `why`.

Every figure keeps its time, and each part names the record section it came from, so a
reader can tell a fresh count from a value the reporter carried over from hours ago.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional

from django.utils.safestring import SafeString

from clusterwatch.monitor.pages import queue_rows
from clusterwatch.monitor.pages.age import Stamp, stamp
from clusterwatch.monitor.record.reading import counts, error_of, integer, obj, text
from clusterwatch.monitor.record.sections import CALL_DAEMONS

WORKER_COUNTS = ("nQueue", "nReady", "nRunning", "nNewWorkers")
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

    @property
    def all_failed(self) -> bool:
        return self.attempts > 0 and self.failed >= self.attempts

    @property
    def last_rows_html(self) -> SafeString:
        return queue_rows.fetch_last_rows(self)

    @property
    def interval_rows_html(self) -> SafeString:
        return queue_rows.fetch_interval_rows(self)


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

    @property
    def rows_html(self) -> SafeString:
        return queue_rows.submit_rows(self)

    @property
    def pushes_html(self) -> SafeString:
        return queue_rows.submit_pushes(self)


@dataclass(frozen=True)
class FailedCalls:
    """Failed calls to the PanDA server by one daemon: host-wide, not per queue."""

    daemon: str
    source: str
    error: Optional[str]
    failed: Optional[int]
    by_call_and_class: list[tuple[str, int]]
    last_line: Optional[str]
    last_at: Optional[Stamp]

    @property
    def failed_html(self) -> SafeString:
        return queue_rows.calls_failed(self)

    @property
    def rows_html(self) -> SafeString:
        return queue_rows.calls_rows(self)


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

    @property
    def rows_html(self) -> SafeString:
        return queue_rows.adjust_rows(self)


def _quoted(queue: str) -> str:
    return queue.replace("\\", "\\\\").replace('"', '\\"')


def fetching(record: Mapping[str, Any], queue: str, now: dt.datetime) -> Fetching:
    section = obj(record.get("fetching"))
    entry = obj(obj(section.get("queues")).get(queue))
    last_raw = entry.get("last")
    last = None
    if isinstance(last_raw, Mapping):
        last = LastFetch(
            at=stamp(last_raw.get("at"), now),
            label=text(last_raw.get("label")),
            asked=integer(last_raw.get("asked")),
            got=integer(last_raw.get("got")),
            outcome=text(last_raw.get("outcome")) or "(no outcome)",
            error_class=text(last_raw.get("error_class")),
        )
    return Fetching(
        source=f'fetching.queues["{_quoted(queue)}"]',
        error=error_of(section) or error_of(section.get("read")),
        present=bool(entry),
        attempts=integer(entry.get("attempts")) or 0,
        failed=integer(entry.get("failed")) or 0,
        errors=counts(entry.get("errors")),
        jobs_asked=integer(entry.get("jobs_asked")),
        jobs_got=integer(entry.get("jobs_got")),
        last=last,
        last_got_jobs=stamp(entry.get("last_got_jobs_at"), now),
    )


def submission(record: Mapping[str, Any], queue: str, now: dt.datetime) -> Submission:
    section = obj(record.get("submission"))
    entry = obj(obj(section.get("queues")).get(queue))
    status = entry.get("workers_status")
    pushes = section.get("recent_pushes")
    ours = [obj(push) for push in (pushes if isinstance(pushes, list) else [])
            if obj(push).get("queue") == queue]
    ours.sort(key=lambda push: str(push.get("at")), reverse=True)  # UTC strings sort by time
    return Submission(
        source=f'submission.queues["{_quoted(queue)}"]',
        error=error_of(section) or error_of(section.get("read")),
        present=bool(entry),
        workers_submitted=integer(entry.get("workers_submitted")),
        submit_failures=integer(entry.get("submit_failures")),
        workers_status=([(name, integer(obj(status).get(name))) for name in WORKER_COUNTS]
                        if isinstance(status, Mapping) else []),
        workers_status_at=stamp(entry.get("workers_status_at"), now),
        job_chunks=integer(entry.get("job_chunks")),
        job_chunks_at=stamp(entry.get("job_chunks_at"), now),
        pushes=[Push(stamp(push.get("at"), now), integer(push.get("workerid")),
                     integer(push.get("pandaid"))) for push in ours[:PUSHES_SHOWN]],
    )


def failed_calls(record: Mapping[str, Any], now: dt.datetime) -> list[FailedCalls]:
    calls = obj(record.get("failed_calls"))
    found = []
    for daemon in CALL_DAEMONS:
        part = obj(calls.get(daemon))
        last = obj(part.get("last"))
        found.append(FailedCalls(
            daemon=daemon,
            source=f"failed_calls.{daemon}",
            error=error_of(part) or error_of(part.get("read")),
            failed=integer(part.get("failed")),
            by_call_and_class=counts(part.get("by_call_and_class")),
            last_line=text(last.get("line")),
            last_at=stamp(last.get("at"), now),
        ))
    return found


def last_failed_call(calls: list[FailedCalls]) -> Optional[FailedCalls]:
    """The most recent failed call of either daemon: the line that says why."""
    dated = [call for call in calls if call.last_line and call.last_at is not None]
    if not dated:
        return None
    return min(dated, key=lambda call: call.last_at.age_s if call.last_at else 0.0)


def _against(value: Any) -> list[tuple[str, str]]:
    if isinstance(value, Mapping):
        return [(str(name), "None" if item is None else str(item))
                for name, item in value.items()]
    if value is None:
        return []
    return [("", str(value))]


def adjustment(record: Mapping[str, Any], queue: str, now: dt.datetime) -> Adjustment:
    section = obj(record.get("adjustment"))
    entry = obj(obj(section.get("queues")).get(queue))
    return Adjustment(
        source=f'adjustment.queues["{_quoted(queue)}"]',
        error=error_of(section) or error_of(section.get("read")),
        present=bool(entry),
        at=stamp(entry.get("at"), now),
        limit=integer(entry.get("limit")),
        limit_name=text(entry.get("limit_name")),
        against=_against(entry.get("against")),
        message=text(entry.get("message")),
    )
