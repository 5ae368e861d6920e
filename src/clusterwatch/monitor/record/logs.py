"""The record's log sections, typed: `fetching`, `submission` and `adjustment`, one harvester
log each, by PanDA queue (`failed_calls`, from two more logs, is in `failed_calls`).

Each type names its fields as the schema names them (record-v1.schema.json; a test holds the
two together). A value that is not what the schema says reads as None or empty, so a record
of an older reporter, or a damaged one, still reads.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Callable, Optional, TypeVar

from clusterwatch.monitor.record.entries import Entries
from clusterwatch.monitor.record.reading import (
    Counts,
    boolean,
    counts,
    error_of,
    integer,
    is_obj,
    obj,
    text,
)
from clusterwatch.monitor.record.times import parse_utc

EntryT = TypeVar("EntryT")


@dataclass(frozen=True)
class LogRead:
    """How much of the section's log was read (`$defs/read`); `error` when it could not be."""

    bytes: Optional[int] = None
    rotated: Optional[bool] = None
    truncated: Optional[bool] = None
    first_run: Optional[bool] = None
    error: Optional[str] = None
    rotated_files: Optional[int] = None
    lost_bytes: Optional[int] = None


@dataclass(frozen=True)
class FetchAttempt:
    """A queue's last job fetch."""

    at: Optional[dt.datetime] = None
    label: Optional[str] = None
    asked: Optional[int] = None
    got: Optional[int] = None
    outcome: Optional[str] = None
    error_class: Optional[str] = None  # set exactly when the fetch failed


@dataclass(frozen=True)
class FetchQueue:
    attempts: Optional[int] = None
    jobs_asked: Optional[int] = None
    jobs_got: Optional[int] = None
    failed: Optional[int] = None
    errors: Counts = ()  # failed fetches by error class
    last: Optional[FetchAttempt] = None
    last_got_jobs_at: Optional[dt.datetime] = None
    # Telemetry 1.9: the streak the latest attempts make, carried across the reporter's
    # runs. None and empty in older reporters' records; a 1.9 record's queue has at least
    # one of the two times (each attempt either failed or did not).
    last_ok_at: Optional[dt.datetime] = None
    failing_since: Optional[dt.datetime] = None  # set: the latest attempt failed
    failing_errors: Counts = ()  # the failures since failing_since, by error class

    @property
    def has_streak(self) -> bool:
        """Whether the record says this queue's streak (a reporter of telemetry 1.9 on)."""
        return self.last_ok_at is not None or self.failing_since is not None


@dataclass(frozen=True)
class FetchingLog:
    read: LogRead = LogRead()
    error: Optional[str] = None
    # The queues with an entry (an empty entry, or one that is no object, says nothing);
    # None when the section has no `queues` object (its log could not be read).
    queues: Optional[Mapping[str, FetchQueue]] = None


@dataclass(frozen=True)
class WorkersStatus:
    """The worker counts the submitter last logged for a queue, in the schema's order."""

    nQueue: Optional[int] = None  # the harvester's names, as the reporter sends them
    nReady: Optional[int] = None
    nRunning: Optional[int] = None
    nNewWorkers: Optional[int] = None

    def pairs(self) -> list[tuple[str, Optional[int]]]:
        return [("nQueue", self.nQueue), ("nReady", self.nReady),
                ("nRunning", self.nRunning), ("nNewWorkers", self.nNewWorkers)]


@dataclass(frozen=True)
class SubmitQueue:
    workers_submitted: Optional[int] = None
    submit_failures: Optional[int] = None
    workers_status: Optional[WorkersStatus] = None  # None: not logged as an object
    workers_status_at: Optional[dt.datetime] = None
    job_chunks: Optional[int] = None
    job_chunks_at: Optional[dt.datetime] = None


@dataclass(frozen=True)
class WorkerPush:
    """A worker the submitter pushed for a PanDA job (`$defs/push`)."""

    at: Optional[dt.datetime] = None
    queue: Optional[str] = None
    workerid: Optional[int] = None
    pandaid: Optional[int] = None


@dataclass(frozen=True)
class SubmissionLog:
    read: LogRead = LogRead()
    error: Optional[str] = None
    queues: Optional[Mapping[str, SubmitQueue]] = None  # as FetchingLog.queues
    recent_pushes: tuple[WorkerPush, ...] = ()


@dataclass(frozen=True)
class AdjusterLimit:
    """The last limit the worker adjuster logged for a queue."""

    at: Optional[dt.datetime] = None
    limit: Optional[int] = None
    limit_name: Optional[str] = None
    # What the limit was set against: `{name: value}` as logged, or one bare value; the
    # schema leaves it open, so it is kept as sent.
    against: Any = None
    message: Optional[str] = None


@dataclass(frozen=True)
class AdjustmentLog:
    read: LogRead = LogRead()
    error: Optional[str] = None
    queues: Optional[Mapping[str, AdjusterLimit]] = None  # as FetchingLog.queues


def log_read(value: Any) -> LogRead:
    part = obj(value)
    if not part:
        return NO_READ
    return LogRead(integer(part.get("bytes")), boolean(part.get("rotated")),
                   boolean(part.get("truncated")), boolean(part.get("first_run")),
                   error_of(part), integer(part.get("rotated_files")),
                   integer(part.get("lost_bytes")))


# What an absent or empty section reads as: one shared value each (they are frozen), since a
# page slice or summary leaves most sections empty and a page reads fifty of them.
NO_READ = LogRead()
_NO_FETCHING = FetchingLog()
_NO_SUBMISSION = SubmissionLog()
_NO_ADJUSTMENT = AdjustmentLog()


def _says_something(name: str, entry: Any) -> bool:
    return is_obj(entry) and bool(entry)


def _queues(section: Mapping[str, Any], entry: Callable[[Mapping[str, Any]], EntryT],
            ) -> Optional[Mapping[str, EntryT]]:
    """The section's queue entries that say something (non-empty objects), read by `entry`."""
    queues = section.get("queues")
    if not is_obj(queues):
        return None
    return Entries(obj(queues), lambda found: entry(obj(found)), _says_something)


def _fetch_attempt(last: Mapping[str, Any]) -> FetchAttempt:
    return FetchAttempt(parse_utc(last.get("at")), text(last.get("label")),
                        integer(last.get("asked")), integer(last.get("got")),
                        text(last.get("outcome")), text(last.get("error_class")))


def _fetch_queue(entry: Mapping[str, Any]) -> FetchQueue:
    last = entry.get("last")
    return FetchQueue(
        attempts=integer(entry.get("attempts")),
        jobs_asked=integer(entry.get("jobs_asked")),
        jobs_got=integer(entry.get("jobs_got")),
        failed=integer(entry.get("failed")),
        errors=counts(entry.get("errors")),
        last=_fetch_attempt(obj(last)) if is_obj(last) else None,
        last_got_jobs_at=parse_utc(entry.get("last_got_jobs_at")),
        last_ok_at=parse_utc(entry.get("last_ok_at")),
        failing_since=parse_utc(entry.get("failing_since")),
        failing_errors=counts(entry.get("failing_errors")),
    )


def fetching_log(value: Any) -> FetchingLog:
    section = obj(value)
    if not section:
        return _NO_FETCHING
    return FetchingLog(log_read(section.get("read")), error_of(section),
                       _queues(section, _fetch_queue))


def _workers_status(status: Mapping[str, Any]) -> WorkersStatus:
    return WorkersStatus(integer(status.get("nQueue")), integer(status.get("nReady")),
                         integer(status.get("nRunning")), integer(status.get("nNewWorkers")))


def _submit_queue(entry: Mapping[str, Any]) -> SubmitQueue:
    status = entry.get("workers_status")
    return SubmitQueue(
        workers_submitted=integer(entry.get("workers_submitted")),
        submit_failures=integer(entry.get("submit_failures")),
        workers_status=_workers_status(obj(status)) if is_obj(status) else None,
        workers_status_at=parse_utc(entry.get("workers_status_at")),
        job_chunks=integer(entry.get("job_chunks")),
        job_chunks_at=parse_utc(entry.get("job_chunks_at")),
    )


def _pushes(value: Any) -> tuple[WorkerPush, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(WorkerPush(parse_utc(push.get("at")), text(push.get("queue")),
                            integer(push.get("workerid")), integer(push.get("pandaid")))
                 for push in map(obj, value) if push)


def submission_log(value: Any) -> SubmissionLog:
    section = obj(value)
    if not section:
        return _NO_SUBMISSION
    return SubmissionLog(log_read(section.get("read")), error_of(section),
                         _queues(section, _submit_queue),
                         _pushes(section.get("recent_pushes")))


def _adjuster_limit(entry: Mapping[str, Any]) -> AdjusterLimit:
    return AdjusterLimit(parse_utc(entry.get("at")), integer(entry.get("limit")),
                         text(entry.get("limit_name")), entry.get("against"),
                         text(entry.get("message")))


def adjustment_log(value: Any) -> AdjustmentLog:
    section = obj(value)
    if not section:
        return _NO_ADJUSTMENT
    return AdjustmentLog(log_read(section.get("read")), error_of(section),
                         _queues(section, _adjuster_limit))
