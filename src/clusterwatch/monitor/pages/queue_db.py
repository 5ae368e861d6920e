"""What the harvester's own database (the record's `harvester_db`) says about one queue:
launch limits from `pq_table`, workers now and ended and the not-finished reasons from
`work_table`.

The `work_table` parts are keyed by computingSite, which for a harvester is the PanDA queue
name; when a record keys them otherwise, the queue's `siteName` from `pq_table` is tried.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

from django.utils.safestring import SafeString

from clusterwatch.monitor.humanize import duration_text
from clusterwatch.monitor.pages import queue_rows
from clusterwatch.monitor.pages.age import Stamp, stamp
from clusterwatch.monitor.record.reading import counts, error_of, integer, number, obj, text
from clusterwatch.monitor.record.sections import LIMITS, queue_sites
from clusterwatch.monitor.record.slices import EXAMPLES_SHOWN, REASONS_SHOWN


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

    @property
    def rows_html(self) -> SafeString:
        return queue_rows.limits_rows(self)

    @property
    def by_type_html(self) -> SafeString:
        return queue_rows.limits_by_type(self)


@dataclass(frozen=True)
class WorkerCounts(Part):
    by_status: list[tuple[str, int]] = field(default_factory=list)
    median_run: Optional[str] = None

    @property
    def total(self) -> int:
        return sum(n for _, n in self.by_status)

    @property
    def rows_html(self) -> SafeString:
        return queue_rows.workers_rows(self)


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

    @property
    def examples_html(self) -> SafeString:
        return queue_rows.reason_examples(self)


@dataclass(frozen=True)
class NotFinished(Part):
    workers: Optional[int] = None
    reasons: list[Reason] = field(default_factory=list)  # the REASONS_SHOWN largest
    more_reasons: int = 0  # reasons not shown, and their workers
    more_workers: int = 0

    @property
    def reasons_html(self) -> SafeString:
        return queue_rows.not_finished_rows(self)

    @property
    def more_text(self) -> str:
        """"and 29 more reasons (1,204 workers)"; empty when every reason is shown."""
        if not self.more_reasons:
            return ""
        noun = "reason" if self.more_reasons == 1 else "reasons"
        workers = "worker" if self.more_workers == 1 else "workers"
        return f"and {self.more_reasons} more {noun} ({self.more_workers:,} {workers})"


@dataclass(frozen=True)
class QueueDb:
    error: Optional[str]
    queue_config_error: Optional[str]
    launch_limits: LaunchLimits
    workers_now: WorkerCounts
    workers_ended: WorkerCounts
    not_finished: NotFinished


def _entry(part: Mapping[str, Any], names: list[str]) -> tuple[Optional[str], Mapping[str, Any]]:
    for name in names:
        if isinstance(part.get(name), Mapping):
            return name, obj(part.get(name))
    return None, {}


def _label(value: Any) -> Optional[str]:
    return None if value is None else str(value)


def launch_limits(database: Mapping[str, Any], queue: str, now: dt.datetime) -> LaunchLimits:
    part = database.get("launch_limits")
    entry = obj(obj(part).get(queue))
    source = f"harvester_db.launch_limits (pq_table) [{queue}]"
    if error_of(part) is not None or not entry:
        return LaunchLimits(source, error_of(part), False)
    return LaunchLimits(
        source, None, True,
        limits=[(name, integer(entry.get(name))) for name in LIMITS],
        by_type=sorted((str(kind), [integer(obj(values).get(name)) for name in LIMITS])
                       for kind, values in obj(entry.get("by_type")).items()),
        site_name=text(entry.get("siteName")),
        job_fetch_time=stamp(entry.get("jobFetchTime"), now),
        submit_time=stamp(entry.get("submitTime"), now),
    )


def _workers(database: Mapping[str, Any], name: str, sites: list[str]) -> WorkerCounts:
    part = database.get(name)
    if error_of(part) is not None:
        return WorkerCounts(f"harvester_db.{name} (work_table)", error_of(part))
    site, entry = _entry(obj(part), sites)
    source = f"harvester_db.{name} (work_table) [{site or sites[0]}]"
    if site is None:
        return WorkerCounts(source)
    if name == "workers_ended":
        median = number(entry.get("finished_median_run_s"))
        return WorkerCounts(source, None, True, counts(entry.get("by_status")),
                            None if median is None else duration_text(median))
    return WorkerCounts(source, None, True, counts(entry))


def _reason(text_: str, group: Mapping[str, Any]) -> Reason:
    examples = group.get("examples")
    return Reason(
        text=text_,
        count=integer(group.get("count")) or 0,
        source=text(group.get("source")) or "unknown",
        examples=[_example(obj(ex))
                  for ex in (examples if isinstance(examples, list) else [])[:EXAMPLES_SHOWN]],
    )


def _example(ex: Mapping[str, Any]) -> Example:
    return Example(_label(ex.get("worker")), _label(ex.get("batch_id")), text(ex.get("node")),
                   text(ex.get("ce")), text(ex.get("log_url")))


def _ranked(source: str, workers: Optional[int], groups: list[tuple[str, Mapping[str, Any]]],
            shown_n: Optional[int]) -> NotFinished:
    """The largest reasons built for showing; of the others only their number and workers."""
    ranked = sorted(((integer(group.get("count")) or 0, name, group) for name, group in groups),
                    key=lambda item: (-item[0], item[1]))
    shown, rest = ranked[:shown_n], ranked[len(ranked) if shown_n is None else shown_n:]
    return NotFinished(source, None, True, workers,
                       [_reason(name, group) for _, name, group in shown],
                       more_reasons=len(rest), more_workers=sum(count for count, _, _ in rest))


def _from_candidates(candidates: list[Any], sites: list[str], source: str,
                     shown_n: Optional[int]) -> NotFinished:
    """Raw `workers_not_finished_candidates` rows (a record without the grouped part):
    grouped by the harvester's own diagnostic, the only reason such a row carries."""
    groups: dict[str, dict[str, Any]] = {}
    for row in map(obj, candidates):
        if row.get("computingSite") not in sites:
            continue
        reason = text(row.get("diagMessage")) or "no reason found"
        group = groups.setdefault(reason, {"count": 0, "source": "harvester_diag",
                                           "examples": []})
        group["count"] += 1
        group["examples"].append({"worker": row.get("workerID"), "batch_id": row.get("batchID"),
                                  "node": row.get("nodeID"), "ce": row.get("computingElement"),
                                  "log_url": row.get("batchLog")})
    if not groups:
        return NotFinished(source, None, False, 0)
    return _ranked(source, sum(group["count"] for group in groups.values()),
                   list(groups.items()), shown_n)


def not_finished(database: Mapping[str, Any], sites: list[str],
                 shown_n: Optional[int] = REASONS_SHOWN) -> NotFinished:
    """The not-finished workers by reason, the `shown_n` largest reasons whole (None: all)."""
    part = database.get("workers_not_finished")
    source = "harvester_db.workers_not_finished (work_table + condor event logs, 24 h)"
    if part is None and isinstance(database.get("workers_not_finished_candidates"), list):
        return _from_candidates(database["workers_not_finished_candidates"], sites,
                                "harvester_db.workers_not_finished_candidates (work_table)",
                                shown_n)
    if error_of(part) is not None:
        return NotFinished(source, error_of(part))
    site, entry = _entry(obj(part), sites)
    if site is None:
        return NotFinished(source)
    return _ranked(f"{source} [{site}]", integer(entry.get("workers")),
                   [(str(name), obj(group)) for name, group in obj(entry.get("reasons")).items()],
                   shown_n)


def queue_db(record: Mapping[str, Any], queue: str, now: dt.datetime,
             reasons_shown: Optional[int] = REASONS_SHOWN) -> QueueDb:
    database = obj(record.get("harvester_db"))
    limits = launch_limits(database, queue, now)
    sites = queue_sites(database, queue)
    return QueueDb(
        error=error_of(database),
        queue_config_error=text(database.get("queue_config_error")),
        launch_limits=limits,
        workers_now=_workers(database, "workers_now", sites),
        workers_ended=_workers(database, "workers_ended", sites),
        not_finished=not_finished(database, sites, reasons_shown),
    )
