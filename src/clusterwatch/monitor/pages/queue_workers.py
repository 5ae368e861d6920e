"""The workers of one queue as the harvester's own database (the record's `harvester_db`)
says: launch limits from `pq_table`, workers now and ended and the not-finished reasons from
`work_table`. The tables' markup is in `queue_rows`.

The `work_table` parts are keyed by computingSite, which for a harvester is the PanDA queue
name; when a record keys them otherwise, the queue's `siteName` from `pq_table` is tried.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Callable, Optional, TypeVar

from clusterwatch.monitor.core.humanize import duration_text
from clusterwatch.monitor.core.stamps import Stamp, stamp
from clusterwatch.monitor.pages.queue_regulation import Regulation, regulation
from clusterwatch.monitor.record.harvester_db import (
    CandidateRow,
    DbPart,
    EndedWorkers,
    HarvesterDb,
    ReasonGroup,
    WorkerExample,
)
from clusterwatch.monitor.record.host_record import HostRecord
from clusterwatch.monitor.record.reading import Counts
from clusterwatch.monitor.record.sections import sites_of
from clusterwatch.monitor.record.slices import EXAMPLES_SHOWN, REASONS_SHOWN

EntryT = TypeVar("EntryT")


@dataclass(frozen=True)
class Part:
    """One database part for the queue: `found` False when the part has no entry for it."""

    source: str
    error: Optional[str] = None
    found: bool = False


@dataclass(frozen=True)
class LaunchLimits(Part):
    limits: list[tuple[str, Optional[int]]] = field(default_factory=list)
    by_type: list[tuple[str, list[Optional[int]]]] = field(default_factory=list)
    site_name: Optional[str] = None
    job_fetch_time: Optional[Stamp] = None
    submit_time: Optional[Stamp] = None

    @property
    def max_workers(self) -> Optional[int]:
        return dict(self.limits).get("maxWorkers")


@dataclass(frozen=True)
class WorkerCounts(Part):
    by_status: list[tuple[str, int]] = field(default_factory=list)
    median_run: Optional[str] = None

    @property
    def total(self) -> int:
        return sum(n for _, n in self.by_status)


@dataclass(frozen=True)
class Example:
    worker: Optional[str]
    batch_id: Optional[str]
    node: Optional[str]
    ce: Optional[str]
    log_url: Optional[str]

    @property
    def link(self) -> Optional[str]:
        """The log URL as a link target only when it is plain http(s), never `javascript:`."""
        if self.log_url and self.log_url.lower().startswith(("http://", "https://")):
            return self.log_url
        return None

    @property
    def text(self) -> str:
        """"worker 8812001, batch 1234.0, node042, gridgk01": one line, made here rather than
        from eight lookups and filters per example in the template."""
        return (f"worker {self.worker or '?'}, batch {self.batch_id or '?'}, "
                f"{self.node or 'no node'}, {self.ce or 'no CE'}")


@dataclass(frozen=True)
class Reason:
    text: str
    count: int
    source: str
    examples: list[Example]


@dataclass(frozen=True)
class NotFinished(Part):
    workers: Optional[int] = None
    reasons: list[Reason] = field(default_factory=list)  # the REASONS_SHOWN largest
    more_reasons: int = 0  # reasons not shown, and their workers
    more_workers: int = 0
    short: Optional[str] = None  # why the counts are short (the reporter's limit was reached)

    @property
    def more_text(self) -> str:
        """"and 29 more reasons (1,204 workers)"; empty when every reason is shown."""
        if not self.more_reasons:
            return ""
        noun = "reason" if self.more_reasons == 1 else "reasons"
        workers = "worker" if self.more_workers == 1 else "workers"
        return f"and {self.more_reasons} more {noun} ({self.more_workers:,} {workers})"


@dataclass(frozen=True)
class QueueWorkers:
    error: Optional[str]
    queue_config_error: Optional[str]
    launch_limits: LaunchLimits
    workers_now: WorkerCounts
    workers_ended: WorkerCounts
    not_finished: NotFinished
    regulation: Regulation = field(default_factory=Regulation)


def launch_limits(database: HarvesterDb, queue: str, now: dt.datetime) -> LaunchLimits:
    part = database.launch_limits
    entry = part.entries.get(queue)
    source = f"harvester_db.launch_limits (pq_table) [{queue}]"
    if part.error is not None or entry is None:
        return LaunchLimits(source, part.error, False)
    return LaunchLimits(
        source, None, True,
        limits=entry.pairs(),
        by_type=sorted((kind, [value for _, value in values.pairs()])
                       for kind, values in entry.by_type.items()),
        site_name=entry.siteName,
        job_fetch_time=stamp(entry.jobFetchTime, now),
        submit_time=stamp(entry.submitTime, now),
    )


def _worker_counts(name: str, part: DbPart[EntryT], sites: list[str],
                   counted: Callable[[EntryT], tuple[Counts, Optional[str]]]) -> WorkerCounts:
    """A `work_table` part's counts for the first of `sites` it has, by `counted`."""
    if part.error is not None:
        return WorkerCounts(f"harvester_db.{name} (work_table)", part.error)
    site, entry = part.first_of(sites)
    source = f"harvester_db.{name} (work_table) [{site or sites[0]}]"
    if entry is None:
        return WorkerCounts(source)
    by_status, median_run = counted(entry)
    return WorkerCounts(source, None, True, list(by_status), median_run)


def _now(by_status: Counts) -> tuple[Counts, Optional[str]]:
    return by_status, None


def _ended(ended: EndedWorkers) -> tuple[Counts, Optional[str]]:
    median = ended.finished_median_run_s
    return ended.by_status, None if median is None else duration_text(median)


def _reason(text: str, group: ReasonGroup) -> Reason:
    return Reason(
        text=text,
        count=group.count or 0,
        source=group.source or "unknown",
        examples=[Example(ex.worker, ex.batch_id, ex.node, ex.ce, ex.log_url)
                  for ex in group.examples[:EXAMPLES_SHOWN]],
    )


def _ranked(source: str, workers: Optional[int], groups: Sequence[tuple[str, ReasonGroup]],
            shown_n: Optional[int]) -> NotFinished:
    """The largest reasons built for showing; of the others only their number and workers."""
    ranked = sorted(((group.count or 0, name, group) for name, group in groups),
                    key=lambda item: (-item[0], item[1]))
    shown, rest = ranked[:shown_n], ranked[len(ranked) if shown_n is None else shown_n:]
    return NotFinished(source, None, True, workers,
                       [_reason(name, group) for _, name, group in shown],
                       more_reasons=len(rest), more_workers=sum(count for count, _, _ in rest))


def _from_candidates(candidates: Sequence[CandidateRow], sites: list[str], source: str,
                     shown_n: Optional[int]) -> NotFinished:
    """Raw `workers_not_finished_candidates` rows (a record without the grouped part):
    grouped by the harvester's own diagnostic, the only reason such a row carries."""
    groups: dict[str, list[WorkerExample]] = {}
    for row in candidates:
        if row.computingSite not in sites:
            continue
        groups.setdefault(row.diagMessage or "no reason found", []).append(WorkerExample(
            row.workerID, row.batchID, row.nodeID, row.computingElement, row.batchLog))
    if not groups:
        return NotFinished(source, None, False, 0)
    return _ranked(source, sum(len(examples) for examples in groups.values()),
                   [(reason, ReasonGroup(len(examples), "harvester_diag", tuple(examples)))
                    for reason, examples in groups.items()], shown_n)


def not_finished(database: HarvesterDb, sites: list[str],
                 shown_n: Optional[int] = REASONS_SHOWN) -> NotFinished:
    """The not-finished workers by reason, the `shown_n` largest reasons whole (None: all),
    and whether the reporter's limit made them short."""
    found = _not_finished(database, sites, shown_n)
    read = database.workers_not_finished_read
    if found.error is not None or read is None or not read.limit_reached:
        return found
    limit = f"{read.limit:,}" if read.limit is not None else "limit of"
    return replace(found, short=(
        f"More workers of this harvester did not finish in the last 24 h than the {limit} "
        "(the newest, all queues together) its reporter reads: every count here is short, "
        "and a queue may have more than shown or none shown at all"))


def _not_finished(database: HarvesterDb, sites: list[str],
                  shown_n: Optional[int]) -> NotFinished:
    part = database.workers_not_finished
    source = "harvester_db.workers_not_finished (work_table + condor event logs, 24 h)"
    if part is None and database.workers_not_finished_candidates is not None:
        return _from_candidates(database.workers_not_finished_candidates, sites,
                                "harvester_db.workers_not_finished_candidates (work_table)",
                                shown_n)
    part = part or DbPart()
    if part.error is not None:
        return NotFinished(source, part.error)
    site, entry = part.first_of(sites)
    if site is None or entry is None:
        return NotFinished(source)
    return _ranked(f"{source} [{site}]", entry.workers, list(entry.reasons.items()), shown_n)


def _sites(database: HarvesterDb, queue: str) -> list[str]:
    """`sections.sites_of` for the typed part: the queue, then its siteName."""
    entry = database.launch_limits.entries.get(queue)
    return sites_of(queue, database.launch_limits.error, entry.siteName if entry else None)


def queue_workers(record: HostRecord, queue: str, now: dt.datetime,
                  reasons_shown: Optional[int] = REASONS_SHOWN) -> QueueWorkers:
    database = record.harvester_db
    sites = _sites(database, queue)
    return QueueWorkers(
        error=database.error,
        queue_config_error=database.queue_config_error,
        launch_limits=launch_limits(database, queue, now),
        workers_now=_worker_counts("workers_now", database.workers_now, sites, _now),
        workers_ended=_worker_counts("workers_ended", database.workers_ended, sites, _ended),
        not_finished=not_finished(database, sites, reasons_shown),
        regulation=regulation(database, queue, sites, now, remote=record.instance is not None),
    )
