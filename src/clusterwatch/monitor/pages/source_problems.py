"""Which sources of a record could not be read, for the hosts overview.

The reporter never drops a source it cannot read: the source becomes `{"error": "..."}` (or
its log's `read` carries an `error`). This lists every such place, parts failing with the
same text together ("harvester_db: launch_limits, workers_now: cannot read ...").
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Optional

from clusterwatch.monitor.record.host_record import HostRecord
from clusterwatch.monitor.record.sections import SECTION_LOGS


@dataclass(frozen=True)
class SourceProblem:
    """A source the reporter could not read; `where` names every part with this error."""

    where: str
    error: str


def _problems_of(record: HostRecord) -> Iterable[tuple[str, Optional[str]]]:
    """(where, error) for every place that may carry an error; None: it does not."""
    # Names in sorted order: PostgreSQL's jsonb does not keep a record's key order.
    for name in record.missing_sections:
        yield name, "absent from the record"
    for name, section in (("fetching", record.fetching), ("submission", record.submission),
                          ("adjustment", record.adjustment)):
        where = f"{name} ({SECTION_LOGS[name]})"
        yield where, section.error
        yield where, section.read.error
    for daemon, calls in record.failed_calls.by_daemon():
        where = f"failed_calls.{daemon} (panda-{daemon}.log)"
        yield where, calls.error
        yield where, calls.read.error
    daemons = record.daemons
    yield "daemons", daemons.error
    if daemons.error is None:
        for log, entry in sorted(daemons.logs.items()):
            yield f"daemons.{log}", entry.error
    yield "processes", record.processes.error
    database = record.harvester_db
    yield "harvester_db", database.error
    for part, error in database.part_errors.items():
        yield f"harvester_db.{part}", error
    yield "harvester_db.queue_config", database.queue_config_error
    volumes = record.health.volumes
    if volumes is not None:
        yield "health.volumes", volumes.error
        if volumes.error is None:
            for mount, reading in sorted(volumes.mounts.items()):
                yield f"health.volumes[{mount}]", reading.error if reading else None
    yield "delivery", record.delivery.error


def _places(wheres: list[str]) -> str:
    """"harvester_db: launch_limits, workers_now" for parts of one section with one error."""
    sections: dict[str, list[str]] = {}
    for where in wheres:
        section, dot, part = where.partition(".")
        sections.setdefault(section if dot else where, []).append(part)
    return "; ".join(
        f"{section}: {', '.join(parts)}" if all(parts) and len(parts) > 1 else
        ", ".join(f"{section}.{part}" if part else section for part in parts)
        for section, parts in sections.items())


def failed_sources(record: HostRecord) -> list[SourceProblem]:
    """Every source carrying an error, parts with the same error text shown together."""
    grouped: dict[str, list[str]] = {}
    for where, error in _problems_of(record):
        if error is None:
            continue
        places = grouped.setdefault(error, [])
        if where not in places:
            places.append(where)
    return [SourceProblem(_places(places), error) for error, places in grouped.items()]


