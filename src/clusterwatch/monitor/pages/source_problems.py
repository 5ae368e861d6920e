"""Which sources of a record could not be read, for the hosts overview.

The reporter never drops a source it cannot read: the source becomes `{"error": "..."}` (or
its log's `read` carries an `error`). This lists every such place, parts failing with the
same text together ("harvester_db: launch_limits, workers_now: cannot read ...").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from clusterwatch.monitor.record.reading import error_of, obj, text
from clusterwatch.monitor.record.sections import CALL_DAEMONS, REQUIRED_SECTIONS, SECTION_LOGS


@dataclass(frozen=True)
class SourceProblem:
    """A source the reporter could not read; `where` names every part with this error."""

    where: str
    error: str


def _problems_of(record: Mapping[str, Any]) -> Iterable[tuple[str, str]]:
    # Names in sorted order: PostgreSQL's jsonb does not keep a record's key order.
    for name in REQUIRED_SECTIONS:
        if name not in record:
            yield name, "absent from the record"
    for name, log in SECTION_LOGS.items():
        section = record.get(name)
        if (error := error_of(section)) is not None:
            yield f"{name} ({log})", error
        if (error := error_of(obj(section).get("read"))) is not None:
            yield f"{name} ({log})", error
    calls = obj(record.get("failed_calls"))
    for daemon in CALL_DAEMONS:
        part = calls.get(daemon)
        for error in (error_of(part), error_of(obj(part).get("read"))):
            if error is not None:
                yield f"failed_calls.{daemon} (panda-{daemon}.log)", error
    daemons = record.get("daemons")
    if (error := error_of(daemons)) is not None:
        yield "daemons", error
    else:
        for log, entry in sorted(obj(daemons).items()):
            if (error := error_of(entry)) is not None:
                yield f"daemons.{log}", error
    if (error := error_of(record.get("processes"))) is not None:
        yield "processes", error
    database = obj(record.get("harvester_db"))
    if (error := error_of(database)) is not None:
        yield "harvester_db", error
    for part, value in sorted(database.items()):
        if part != "error" and (error := error_of(value)) is not None:
            yield f"harvester_db.{part}", error
    if (error := text(database.get("queue_config_error"))) is not None:
        yield "harvester_db.queue_config", error
    volumes = obj(record.get("health")).get("volumes")
    if (error := error_of(volumes)) is not None:
        yield "health.volumes", error
    else:
        for mount, entry in sorted(obj(volumes).items()):
            if (error := error_of(entry)) is not None:
                yield f"health.volumes[{mount}]", error
    if (error := error_of(record.get("delivery"))) is not None:
        yield "delivery", error


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


def failed_sources(record: Mapping[str, Any]) -> list[SourceProblem]:
    """Every source carrying an error, parts with the same error text shown together."""
    grouped: dict[str, list[str]] = {}
    for where, error in _problems_of(record):
        places = grouped.setdefault(error, [])
        if where not in places:
            places.append(where)
    return [SourceProblem(_places(places), error) for error, places in grouped.items()]


