"""The record's sections about the reporter's host and its own run, typed: `interval`,
`daemons`, `processes`, `health`, `delivery`, `characters_replaced` and `state`.

Field names are the schema's (record-v1.schema.json; a test holds the two together).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

from clusterwatch.monitor.record.entries import Entries
from clusterwatch.monitor.record.reading import (
    Counts,
    boolean,
    counts,
    error_of,
    integer,
    is_obj,
    number,
    obj,
    text,
    texts,
)
from clusterwatch.monitor.record.times import parse_utc


@dataclass(frozen=True)
class RecordInterval:
    """The span the record's counts cover."""

    since: Optional[dt.datetime] = None
    seconds: Optional[int] = None
    first_run: Optional[bool] = None  # the reporter's first run: positions set, nothing counted
    expected_s: Optional[int] = None  # how often the host runs (reporters since 1.3)

    def every_s(self, configured: int) -> int:
        """The record's own run interval, or the configured one for a record without it."""
        return self.expected_s if self.expected_s is not None and self.expected_s > 0 \
            else configured


@dataclass(frozen=True)
class DaemonLog:
    error: Optional[str] = None
    age_s: Optional[float] = None  # since the log was last written
    bytes: Optional[int] = None


@dataclass(frozen=True)
class Daemons:
    """The harvester daemons' logs: the section's error, or each log by name."""

    error: Optional[str] = None
    logs: Mapping[str, DaemonLog] = field(default_factory=dict)


@dataclass(frozen=True)
class Processes:
    error: Optional[str] = None
    count: Optional[int] = None
    by_form: Counts = ()


@dataclass(frozen=True)
class VolumeReading:
    """One mount point: a reading, the mount it shares a filesystem with, or an error."""

    error: Optional[str] = None
    same_as: Optional[str] = None
    total_bytes: Optional[float] = None
    avail_bytes: Optional[float] = None
    used_percent: Optional[float] = None
    device: Optional[str] = None


@dataclass(frozen=True)
class Volumes:
    error: Optional[str] = None
    # By mount point; None for an entry that is no object at all.
    mounts: Mapping[str, Optional[VolumeReading]] = field(default_factory=dict)


@dataclass(frozen=True)
class Health:
    volumes: Optional[Volumes] = None  # None: missing, or no object


@dataclass(frozen=True)
class DeliveryState:
    """The reporter's own delivery: its buffer of records not yet taken by the monitor."""

    backlog: Optional[int] = None
    dropped: Optional[int] = None
    set_aside: Optional[int] = None
    reasons: Counts = ()
    oldest_at: Optional[dt.datetime] = None
    last_error: Optional[str] = None
    last_error_at: Optional[dt.datetime] = None
    error: Optional[str] = None


@dataclass(frozen=True)
class CharactersReplaced:
    """Text the reporter changed because no database stores it (NUL, lone surrogates)."""

    count: Optional[int]
    where: tuple[str, ...]


@dataclass(frozen=True)
class StateDamage:
    """The reporter's state file was damaged: what was wrong and what could be recovered."""

    error: Optional[str]
    kept_as: Optional[str]
    recovered: tuple[str, ...]


def record_interval(value: Any) -> RecordInterval:
    found = obj(value)
    return RecordInterval(parse_utc(found.get("since")), integer(found.get("seconds")),
                          boolean(found.get("first_run")), integer(found.get("expected_s")))


def _not_the_error(name: str, value: Any) -> bool:
    return name != "error"


def _daemon_log(value: Any) -> DaemonLog:
    entry = obj(value)
    return DaemonLog(error_of(entry), number(entry.get("age_s")), integer(entry.get("bytes")))


_NO_DAEMONS = Daemons()  # shared: frozen


def daemons(value: Any) -> Daemons:
    section = obj(value)
    if not section:
        return _NO_DAEMONS
    return Daemons(error_of(section), Entries(section, _daemon_log, _not_the_error))


def processes(value: Any) -> Processes:
    section = obj(value)
    return Processes(error_of(section), integer(section.get("count")),
                     counts(section.get("by_form")))


def _volume(entry: Mapping[str, Any]) -> VolumeReading:
    device = entry.get("device")
    return VolumeReading(error_of(entry), text(entry.get("same_as")),
                         number(entry.get("total_bytes")), number(entry.get("avail_bytes")),
                         number(entry.get("used_percent")),
                         None if device is None else str(device))


def health(value: Any) -> Health:
    found = obj(value).get("volumes")
    if not is_obj(found):
        return Health()
    volumes = obj(found)
    return Health(Volumes(error_of(volumes), Entries(
        volumes, lambda entry: _volume(obj(entry)) if is_obj(entry) else None, _not_the_error)))


def delivery_state(value: Any) -> DeliveryState:
    section = obj(value)
    return DeliveryState(
        backlog=integer(section.get("backlog")),
        dropped=integer(section.get("dropped")),
        set_aside=integer(section.get("set_aside")),
        reasons=counts(section.get("reasons")),
        oldest_at=parse_utc(section.get("oldest_at")),
        last_error=text(section.get("last_error")),
        last_error_at=parse_utc(section.get("last_error_at")),
        error=error_of(section),
    )


def characters_replaced(value: Any) -> Optional[CharactersReplaced]:
    if not is_obj(value):
        return None
    return CharactersReplaced(integer(value.get("count")), texts(value.get("where")))


def state_damage(value: Any) -> Optional[StateDamage]:
    if not is_obj(value):
        return None
    return StateDamage(text(value.get("error")), text(value.get("kept_as")),
                       texts(value.get("recovered")))
