"""The record's `admission` section (telemetry 1.4), typed: how the workers that ended in the
last hour ended, per queue, with their slot and lifetime evidence.

Reporters before 1.4 send no such section (None). Every value the reporter could not measure
stays None here, never 0: a grid-universe or pre-23.2 event log has no slot-busy time.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

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

# The reporter's classes, in the order a page lists them.
END_CLASSES = ("refusal", "cancelled", "error", "finished", "unclassified")


@dataclass(frozen=True)
class EndTimes:
    """Sums over the workers that have each value; `*_workers` says how many had it."""

    recorded_wall_s: Optional[int] = None
    recorded_wall_workers: Optional[int] = None
    slot_busy_s: Optional[int] = None
    slot_busy_workers: Optional[int] = None
    execute_s: Optional[int] = None
    execute_workers: Optional[int] = None


@dataclass(frozen=True)
class RefusalExample:
    worker: Optional[str] = None
    execution_host: Optional[str] = None
    execution_queue: Optional[str] = None
    remaining_lifetime_s: Optional[int] = None


@dataclass(frozen=True)
class RefusalGroup:
    """Refusals on one slot at one admission floor (required lifetime); None: unknown."""

    slot_name: Optional[str] = None
    required_lifetime_s: Optional[int] = None
    count: int = 0
    repeated: bool = False
    remaining_lifetime_s_min: Optional[int] = None
    remaining_lifetime_s_max: Optional[int] = None
    examples: tuple[RefusalExample, ...] = ()


@dataclass(frozen=True)
class EndClass:
    count: int = 0
    exit_codes: Counts = ()
    times: EndTimes = field(default_factory=EndTimes)
    groups: tuple[RefusalGroup, ...] = ()


@dataclass(frozen=True)
class Coverage:
    with_evidence: int = 0
    without_evidence: int = 0
    missing_reasons: Counts = ()
    not_available: Mapping[str, Counts] = field(default_factory=dict)  # by evidence field


@dataclass(frozen=True)
class AdmissionQueue:
    ended: int = 0
    refusal: EndClass = field(default_factory=EndClass)
    cancelled: EndClass = field(default_factory=EndClass)
    error: EndClass = field(default_factory=EndClass)
    finished: EndClass = field(default_factory=EndClass)
    unclassified: EndClass = field(default_factory=EndClass)
    coverage: Coverage = field(default_factory=Coverage)

    def classes(self) -> list[tuple[str, EndClass]]:
        """(name, class) in END_CLASSES order."""
        return [(name, getattr(self, name)) for name in END_CLASSES]


@dataclass(frozen=True)
class AdmissionRead:
    records_read: Optional[int] = None
    from_cache: Optional[int] = None
    deferred: Optional[int] = None
    cap: Optional[int] = None


@dataclass(frozen=True)
class Admission:
    error: Optional[str] = None
    window_s: Optional[int] = None
    refusal_exit_codes: tuple[int, ...] = ()
    workers: Optional[int] = None
    workers_limit_reached: bool = False
    queue_config_error: Optional[str] = None
    read: AdmissionRead = field(default_factory=AdmissionRead)
    queues: Mapping[str, AdmissionQueue] = field(default_factory=dict)


def _count(value: Any) -> int:
    found = integer(value)
    return found if found is not None and found >= 0 else 0


def _times(value: Any) -> EndTimes:
    found = obj(value)
    return EndTimes(*(integer(found.get(name)) for name in (
        "recorded_wall_s", "recorded_wall_workers", "slot_busy_s", "slot_busy_workers",
        "execute_s", "execute_workers")))


def _example(value: Any) -> RefusalExample:
    found = obj(value)
    worker = found.get("worker")
    return RefusalExample(None if worker is None else str(worker),
                          text(found.get("execution_host")), text(found.get("execution_queue")),
                          integer(found.get("remaining_lifetime_s")))


def _group(value: Any) -> RefusalGroup:
    found = obj(value)
    examples = found.get("examples")
    return RefusalGroup(
        text(found.get("slot_name")), integer(found.get("required_lifetime_s")),
        _count(found.get("count")), boolean(found.get("repeated")) is True,
        integer(found.get("remaining_lifetime_s_min")),
        integer(found.get("remaining_lifetime_s_max")),
        tuple(_example(e) for e in examples if is_obj(e)) if isinstance(examples, list) else ())


def _end_class(value: Any) -> EndClass:
    found = obj(value)
    groups = found.get("groups")
    return EndClass(_count(found.get("count")), counts(found.get("exit_codes")),
                    _times(found.get("times")),
                    tuple(_group(g) for g in groups if is_obj(g))
                    if isinstance(groups, list) else ())


def _coverage(value: Any) -> Coverage:
    found = obj(value)
    return Coverage(_count(found.get("with_evidence")), _count(found.get("without_evidence")),
                    counts(found.get("missing_reasons")),
                    {str(name): counts(reasons)
                     for name, reasons in obj(found.get("not_available")).items()})


def _queue(value: Any) -> AdmissionQueue:
    found = obj(value)
    return AdmissionQueue(
        ended=_count(found.get("ended")), refusal=_end_class(found.get("refusal")),
        cancelled=_end_class(found.get("cancelled")), error=_end_class(found.get("error")),
        finished=_end_class(found.get("finished")),
        unclassified=_end_class(found.get("unclassified")),
        coverage=_coverage(found.get("coverage")))


def admission(value: Any) -> Optional[Admission]:
    """The section, or None when the record has none (reporters before telemetry 1.4)."""
    if value is None:
        return None
    found = obj(value)
    error = error_of(value) if is_obj(value) else "not a JSON object"
    if error is not None:
        return Admission(error=error)
    read = obj(found.get("read"))
    codes = found.get("refusal_exit_codes")
    return Admission(
        window_s=integer(found.get("window_s")),
        refusal_exit_codes=tuple(c for c in codes if integer(c) is not None)
        if isinstance(codes, list) else (),
        workers=integer(found.get("workers")),
        workers_limit_reached=boolean(found.get("workers_limit_reached")) is True,
        queue_config_error=text(found.get("queue_config_error")),
        read=AdmissionRead(*(integer(read.get(name)) for name in (
            "records_read", "from_cache", "deferred", "cap"))),
        queues={str(name): _queue(queue) for name, queue in obj(found.get("queues")).items()
                if is_obj(queue)},
    )
