"""The `/panda/worker-starts/` page, built from plain data: per harvester and queue, the
workers that started in the record's interval (telemetry 1.3's cohort), the workers and
fetched jobs now, and how the workers that ended in the last hour ended (telemetry 1.4).

What the page must not claim is decided here: a started worker is not payload capacity (it
may refuse before any job), a refusal says what the launcher decided about lifetime, not
that the node is at fault, and the harvester's recorded wall time includes startup and
reporting delay, so slot-busy and execution time are shown beside it, never folded into it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any, Optional

from clusterwatch.monitor.record.admission import Admission, AdmissionQueue, EndClass
from clusterwatch.monitor.record.host_record import HostRecord, parse_record
from clusterwatch.monitor.record.reading import Counts

NOT_REPORTED = "not reported"


@dataclass(frozen=True)
class Started:
    """The start cohort: a count, or why there is none."""

    count: Optional[int] = None
    by_status: Counts = ()
    note: Optional[str] = None  # "not reported" (older reporter) or the part's error


@dataclass(frozen=True)
class TimeCell:
    """A sum of seconds over `measured` of `of` workers; None when none was measured."""

    seconds: Optional[int] = None
    measured: int = 0
    of: int = 0


@dataclass(frozen=True)
class QueueRow:
    key: str
    queue: str
    collected_at: Optional[dt.datetime]
    interval_s: Optional[int]
    started: Started
    workers_now: Counts
    jobs_fetched: Optional[int]
    admission: Optional[AdmissionQueue]
    admission_note: Optional[str]  # why there is no admission row for this queue
    refusal_times: tuple[TimeCell, TimeCell, TimeCell] = (TimeCell(), TimeCell(), TimeCell())

    @property
    def classes(self) -> list[tuple[str, EndClass]]:
        return self.admission.classes() if self.admission is not None else []


@dataclass(frozen=True)
class WorkerStartsPage:
    rows: tuple[QueueRow, ...] = ()
    # Per harvester key: the section's own error, or how much of it a run could read.
    problems: tuple[tuple[str, str], ...] = ()
    refusal_codes: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    # Keys shown that the harvester registry lacks: nothing alarms if they stop (unless they
    # hold a token), as the queue page says too.
    unregistered: tuple[str, ...] = ()


def _time_cell(seconds: Optional[int], measured: Optional[int], of: int) -> TimeCell:
    count = measured or 0
    return TimeCell(seconds if count else None, count, of)


def _refusal_times(queue: Optional[AdmissionQueue]) -> tuple[TimeCell, TimeCell, TimeCell]:
    if queue is None:
        return (TimeCell(), TimeCell(), TimeCell())
    times, of = queue.refusal.times, queue.refusal.count
    return (_time_cell(times.recorded_wall_s, times.recorded_wall_workers, of),
            _time_cell(times.slot_busy_s, times.slot_busy_workers, of),
            _time_cell(times.execute_s, times.execute_workers, of))


def _started(record: HostRecord, queue: str) -> Started:
    # None: a reporter before telemetry 1.3. A remote record's starts read the same (its
    # older `workers_started` too: record/harvester_db.py).
    part = record.harvester_db.worker_starts
    if part is None:
        return Started(note=NOT_REPORTED)
    if part.error is not None:
        return Started(note=part.error)
    entry = part.entries.get(queue)
    if entry is None:
        return Started(count=0)  # the part lists only sites where a worker started
    return Started(entry.started, entry.by_status)


def _admission_note(section: Optional[Admission]) -> Optional[str]:
    if section is None:
        return NOT_REPORTED
    return section.error


def _queues(record: HostRecord) -> list[str]:
    names: set[str] = set()
    if record.admission is not None:
        names.update(record.admission.queues)
    for part in (record.harvester_db.worker_starts, record.harvester_db.workers_now):
        if part is not None:
            names.update(part.entries)
    return sorted(names)


def _problem(key: str, section: Optional[Admission]) -> Optional[str]:
    if section is None or section.error is not None:
        return None  # said in each row
    read = section.read
    parts = []
    if read.deferred:
        parts.append(f"{read.deferred} workers' files not read yet (at most {read.cap} "
                     "startup records are read per run; the next runs read them)")
    if section.workers_limit_reached:
        parts.append(f"more workers ended in the hour than the {section.workers} read")
    if section.queue_config_error:
        parts.append(section.queue_config_error)
    return "; ".join(parts) or None


def worker_starts_page(records: Iterable[tuple[str, Mapping[str, Any]]],
                       only_queue: Optional[str] = None,
                       registered: Optional[AbstractSet[str]] = None) -> WorkerStartsPage:
    """`records`: (harvester key, its latest record or the parts this page reads);
    `registered`: the harvester registry's keys (None: not consulted)."""
    rows: list[QueueRow] = []
    problems: list[tuple[str, str]] = []
    codes: dict[str, tuple[int, ...]] = {}
    for key, stored in sorted(records, key=lambda pair: pair[0]):
        record = parse_record(stored)
        section = record.admission
        if section is not None and section.error is None:
            codes[key] = section.refusal_exit_codes
        problem = _problem(key, section)
        if problem is not None:
            problems.append((key, problem))
        fetching = record.fetching.queues or {}
        for queue in _queues(record):
            if only_queue is not None and queue != only_queue:
                continue
            found = section.queues.get(queue) if section is not None else None
            note = _admission_note(section)
            if found is None and note is None:
                note = "no worker of this queue ended in the last hour"
            fetched = fetching.get(queue)
            rows.append(QueueRow(
                key=key, queue=queue, collected_at=record.collected_at,
                interval_s=record.interval.seconds, started=_started(record, queue),
                workers_now=(record.harvester_db.workers_now.entries.get(queue) or ()),
                jobs_fetched=fetched.jobs_got if fetched is not None else None,
                admission=found, admission_note=note, refusal_times=_refusal_times(found)))
    shown = sorted({row.key for row in rows})
    unregistered = () if registered is None else tuple(
        key for key in shown if key not in registered)
    return WorkerStartsPage(tuple(rows), tuple(problems), codes, unregistered)
