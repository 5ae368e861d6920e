"""The record's `harvester_db` section, typed: what the harvester's own database said when the
record was collected (`pq_table`'s launch limits, `work_table`'s workers).

The schema leaves the parts open (`{"type": "object"}`); their shapes are those
`reporter/harvester_db.py` and `reporter/record.py` build. Each part is `{"error": ...}` or
keyed by queue (launch limits) or computingSite (workers), and a part that is not what it
should be reads as empty, never as a failure.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Callable, Generic, Optional, TypeVar

from clusterwatch.monitor.record.entries import Entries
from clusterwatch.monitor.record.reading import (
    Counts,
    counts,
    error_of,
    integer,
    is_obj,
    label,
    number,
    obj,
    text,
)
from clusterwatch.monitor.record.regulation import (
    CacheKey,
    LimitInForce,
    WorkerStarts,
    cache_key,
    limit_in_force,
    status_counts_as_starts,
    worker_starts,
)
from clusterwatch.monitor.record.remote_harvester_db import (
    NewWorkers,
    QueueConfig,
    ServiceMetrics,
    new_workers,
    queue_config,
    service_metrics,
)
from clusterwatch.monitor.record.sections import LIMITS, sites_of
from clusterwatch.monitor.record.times import parse_utc

EntryT = TypeVar("EntryT")


@dataclass(frozen=True)
class WorkerLimits:
    """`pq_table`'s limits, in `LIMITS` order (the harvester's names)."""

    nQueueLimitWorker: Optional[int] = None
    maxWorkers: Optional[int] = None
    nQueueLimitJob: Optional[int] = None
    nNewWorkers: Optional[int] = None

    def pairs(self) -> list[tuple[str, Optional[int]]]:
        return [(name, getattr(self, name)) for name in LIMITS]


@dataclass(frozen=True)
class QueueLaunchLimits(WorkerLimits):
    by_type: Mapping[str, WorkerLimits] = field(default_factory=dict)  # by "jobType/resourceType"
    siteName: Optional[str] = None
    jobFetchTime: Optional[dt.datetime] = None
    submitTime: Optional[dt.datetime] = None
    # From the queue configuration (reporters since telemetry 1.3; None before).
    nQueueLimitWorkerRatio: Optional[int] = None
    nQueueLimitWorkerMin: Optional[int] = None
    nQueueLimitWorkerMax: Optional[int] = None
    limit_in_force: Optional[LimitInForce] = None
    # A remote record's (None in a reporter's): the queue as the harvester runs it, and the
    # PanDA server's count of workers to submit.
    config: Optional[QueueConfig] = field(default=None, metadata={"remote": "builder's"})
    new_workers: Optional[NewWorkers] = field(default=None, metadata={"remote": "builder's"})


@dataclass(frozen=True)
class EndedWorkers:
    by_status: Counts = ()
    finished_median_run_s: Optional[float] = None


@dataclass(frozen=True)
class WorkerExample:
    worker: Optional[str] = None
    batch_id: Optional[str] = None
    node: Optional[str] = None
    ce: Optional[str] = None
    log_url: Optional[str] = None


@dataclass(frozen=True)
class ReasonGroup:
    """Workers that did not finish, for one reason of the batch system."""

    count: Optional[int] = None
    source: Optional[str] = None  # where the reason was read: condor_event_log, harvester_diag...
    examples: tuple[WorkerExample, ...] = ()


@dataclass(frozen=True)
class NotFinishedWorkers:
    workers: Optional[int] = None
    reasons: Mapping[str, ReasonGroup] = field(default_factory=dict)


@dataclass(frozen=True)
class NotFinishedRead:
    """How many not-finished workers the reporter read (at most `limit`, the newest) and
    whether more did not finish: then every count of `workers_not_finished` is short."""

    window_s: Optional[int] = None
    workers: Optional[int] = None
    limit: Optional[int] = None
    limit_reached: bool = False


@dataclass(frozen=True)
class CandidateRow:
    """A raw `work_table` row of a worker that did not finish, as older reporters sent them
    (`workers_not_finished_candidates`) instead of the grouped part."""

    computingSite: Optional[str] = None
    diagMessage: Optional[str] = None
    workerID: Optional[str] = None
    batchID: Optional[str] = None
    nodeID: Optional[str] = None
    computingElement: Optional[str] = None
    batchLog: Optional[str] = None


@dataclass(frozen=True)
class DbPart(Generic[EntryT]):
    """One part: its error, or its entries by queue or computingSite."""

    error: Optional[str] = None
    entries: Mapping[str, EntryT] = field(default_factory=dict)

    def first_of(self, names: Iterable[str]) -> tuple[Optional[str], Optional[EntryT]]:
        """The first of `names` with an entry, and that entry."""
        for name in names:
            if name in self.entries:
                return name, self.entries[name]
        return None, None


@dataclass(frozen=True)
class HarvesterDb:
    error: Optional[str] = None
    queue_config_error: Optional[str] = field(
        default=None, metadata={"beyond_schema": "reporter/record.py sends it; the schema "
                                                 "leaves harvester_db open"})
    launch_limits: DbPart[QueueLaunchLimits] = DbPart()
    workers_now: DbPart[Counts] = DbPart()
    workers_ended: DbPart[EndedWorkers] = DbPart()
    # None when the record has no grouped part (absent or null): an older reporter, whose
    # raw rows are then the candidates below.
    workers_not_finished: Optional[DbPart[NotFinishedWorkers]] = None
    workers_not_finished_candidates: Optional[tuple[CandidateRow, ...]] = field(
        default=None, metadata={"beyond_schema": "older reporters' raw rows"})
    # None from reporters that did not say (before it, or when the workers were not read).
    workers_not_finished_read: Optional[NotFinishedRead] = None
    service_metrics: ServiceMetrics = field(default_factory=ServiceMetrics)
    # Telemetry 1.3; None when the record has no such part (a reporter before it). A remote
    # record's older `workers_started` reads as it too.
    worker_starts: Optional[DbPart[WorkerStarts]] = None
    job_demand_cache: Optional[DbPart[CacheKey]] = None
    # A remote record's workers still live seven days after submission, by site (None when
    # the record has no such part: a reporter's).
    workers_overdue: Optional[DbPart[Counts]] = field(
        default=None, metadata={"beyond_schema": "the remote builder sends it; the schema "
                                                 "leaves harvester_db open"})
    # The error of every part that failed, by part name in sorted order (also parts this
    # monitor does not know yet).
    part_errors: Mapping[str, str] = field(default_factory=dict, metadata={"derived": True})

    def queue_sites(self, queue: str) -> list[str]:
        """`sections.sites_of` for this part: the queue, then its pq_table siteName."""
        entry = self.launch_limits.entries.get(queue)
        return sites_of(queue, self.launch_limits.error, entry.siteName if entry else None)


def _part(value: Any, entry: Callable[[Mapping[str, Any]], EntryT],
          empty_says_nothing: bool = False) -> DbPart[EntryT]:
    part = obj(value)
    return DbPart(error_of(part), Entries(
        part, lambda found: entry(obj(found)),
        lambda name, found: is_obj(found) and (bool(found) or not empty_says_nothing)))


def _optional_part(value: Any, entry: Callable[[Any], EntryT]) -> Optional[DbPart[EntryT]]:
    return None if value is None else _part(value, entry)


def _limits(values: Any) -> WorkerLimits:
    found = obj(values)
    return WorkerLimits(*(integer(found.get(name)) for name in LIMITS))


def _launch_limits(entry: Mapping[str, Any]) -> QueueLaunchLimits:
    return QueueLaunchLimits(
        nQueueLimitWorker=integer(entry.get("nQueueLimitWorker")),
        maxWorkers=integer(entry.get("maxWorkers")),
        nQueueLimitJob=integer(entry.get("nQueueLimitJob")),
        nNewWorkers=integer(entry.get("nNewWorkers")),
        by_type=Entries(obj(entry.get("by_type")), _limits),
        siteName=text(entry.get("siteName")),
        jobFetchTime=parse_utc(entry.get("jobFetchTime")),
        submitTime=parse_utc(entry.get("submitTime")),
        nQueueLimitWorkerRatio=integer(entry.get("nQueueLimitWorkerRatio")),
        nQueueLimitWorkerMin=integer(entry.get("nQueueLimitWorkerMin")),
        nQueueLimitWorkerMax=integer(entry.get("nQueueLimitWorkerMax")),
        limit_in_force=limit_in_force(entry.get("limit_in_force")),
        config=queue_config(entry.get("config")),
        new_workers=new_workers(entry.get("new_workers")),
    )


def _ended(entry: Mapping[str, Any]) -> EndedWorkers:
    return EndedWorkers(counts(entry.get("by_status")), number(entry.get("finished_median_run_s")))


def _example(value: Any) -> WorkerExample:
    found = obj(value)
    return WorkerExample(label(found.get("worker")), label(found.get("batch_id")),
                         text(found.get("node")), text(found.get("ce")),
                         text(found.get("log_url")))


def _reason(value: Any) -> ReasonGroup:
    group = obj(value)
    examples = group.get("examples")
    return ReasonGroup(integer(group.get("count")), text(group.get("source")),
                       tuple(map(_example, examples)) if isinstance(examples, list) else ())


def _not_finished(entry: Mapping[str, Any]) -> NotFinishedWorkers:
    return NotFinishedWorkers(integer(entry.get("workers")),
                              Entries(obj(entry.get("reasons")), _reason))


def _candidates(value: Any) -> Optional[tuple[CandidateRow, ...]]:
    if not isinstance(value, list):
        return None
    return tuple(CandidateRow(text(row.get("computingSite")), text(row.get("diagMessage")),
                              label(row.get("workerID")), label(row.get("batchID")),
                              text(row.get("nodeID")), text(row.get("computingElement")),
                              text(row.get("batchLog")))
                 for row in value if is_obj(row))


def _not_finished_read(value: Any) -> Optional[NotFinishedRead]:
    if not is_obj(value) or error_of(value) is not None:
        return None
    return NotFinishedRead(integer(value.get("window_s")), integer(value.get("workers")),
                           integer(value.get("limit")), value.get("limit_reached") is True)


def _worker_starts(database: Mapping[str, Any]) -> Optional[DbPart[WorkerStarts]]:
    starts = database.get("worker_starts")
    if starts is not None:
        return _part(starts, worker_starts)
    return _optional_part(database.get("workers_started"), status_counts_as_starts)


_NO_DATABASE = HarvesterDb()  # shared: frozen


def harvester_db(value: Any) -> HarvesterDb:
    database = obj(value)
    if not database:
        return _NO_DATABASE
    not_finished = database.get("workers_not_finished")
    return HarvesterDb(
        error=error_of(database),
        queue_config_error=text(database.get("queue_config_error")),
        # A queue's limits entry with nothing in it is no pq_table row for the queue.
        launch_limits=_part(database.get("launch_limits"), _launch_limits,
                            empty_says_nothing=True),
        workers_now=_part(database.get("workers_now"), counts),
        workers_ended=_part(database.get("workers_ended"), _ended),
        workers_not_finished=None if not_finished is None
        else _part(not_finished, _not_finished),
        workers_not_finished_candidates=_candidates(
            database.get("workers_not_finished_candidates")),
        service_metrics=service_metrics(database.get("service_metrics")),
        workers_not_finished_read=_not_finished_read(database.get("workers_not_finished_read")),
        worker_starts=_worker_starts(database),
        job_demand_cache=_optional_part(database.get("job_demand_cache"), cache_key),
        # Absent is "not in this record"; null reads as an empty part, as the page always had.
        workers_overdue=_part(database["workers_overdue"], counts)
        if "workers_overdue" in database else None,
        part_errors={part: error for part, found in sorted(database.items())
                     if part != "error" and (error := error_of(found)) is not None},
    )
