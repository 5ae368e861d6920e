"""The record's remote harvester sections, typed: `instance` (the heartbeat the PanDA server
has), `queue_status` (each queue's effective queueStatus) and `dialogs` (the harvester's
messages to the server over 24 hours).

Records built on the monitor's side for a harvester no reporter can run beside
(`clusterwatch.monitor.panda.remote.builder`) carry them; a reporter's record carries
`queue_status` from telemetry 1.5 on, with each queue's `pilot_dispatch` from 1.6 on
(`record.pilot_dispatch`), and reads None for what it lacks. Field names are the schema's (a
test holds the two together).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

from clusterwatch.monitor.record.entries import Entries
from clusterwatch.monitor.record.pilot_dispatch import PilotDispatch, pilot_dispatch
from clusterwatch.monitor.record.reading import (
    Counts,
    boolean,
    counts,
    error_of,
    integer,
    is_obj,
    obj,
    text,
    texts,
)
from clusterwatch.monitor.record.times import parse_utc


@dataclass(frozen=True)
class Instance:
    """The heartbeat (`harvester_instances`), or the error saying there is none."""

    error: Optional[str] = None
    harvester_id: Optional[str] = None
    start: Optional[dt.datetime] = None
    last_heartbeat: Optional[dt.datetime] = None
    heartbeat_age_s: Optional[int] = None
    heartbeat_ahead_s: Optional[int] = None  # the heartbeat is dated after collection
    version: Optional[str] = None
    commit_stamp: Optional[str] = None
    heartbeat_from: Optional[str] = None  # "" or an IP address: never an identity


@dataclass(frozen=True)
class QueueState:
    status: Optional[str] = None  # the effective queueStatus, lower case
    active: Optional[bool] = None
    pilot_dispatch: Optional[PilotDispatch] = None  # host reporters from telemetry 1.6 on


@dataclass(frozen=True)
class DroppedQueue:
    queue: Optional[str] = None
    message: Optional[str] = None
    fatal: Optional[bool] = None  # the harvester's reload fails on the whole file


@dataclass(frozen=True)
class QueueStatus:
    error: Optional[str] = None
    source: Optional[str] = None
    queues: Mapping[str, QueueState] = field(default_factory=dict)
    dropped: tuple[DroppedQueue, ...] = ()
    unconfigured: tuple[str, ...] = ()


@dataclass(frozen=True)
class DialogMessage:
    at: Optional[dt.datetime] = None
    level: Optional[str] = None
    identifier: Optional[str] = None
    message: Optional[str] = None


@dataclass(frozen=True)
class DialogModule:
    count: Optional[int] = None
    by_level: Counts = ()
    latest: Optional[DialogMessage] = None


@dataclass(frozen=True)
class DialogKind:
    """Messages alike but for their numbers (written `#` in `kind`)."""

    module: Optional[str] = None
    level: Optional[str] = None
    kind: Optional[str] = None
    queues: tuple[str, ...] = ()  # the harvester's queues it names
    count: Optional[int] = None
    first: Optional[dt.datetime] = None
    latest: Optional[DialogMessage] = None


@dataclass(frozen=True)
class Dialogs:
    error: Optional[str] = None
    since: Optional[dt.datetime] = None
    window_s: Optional[int] = None
    messages: Optional[int] = None
    dated_ahead: Optional[int] = None
    other_levels: Counts = ()
    modules: Mapping[str, DialogModule] = field(default_factory=dict)
    kinds: tuple[DialogKind, ...] = ()
    kinds_left_out: Optional[int] = None
    messages_left_out: Optional[int] = None


def instance(value: Any) -> Optional[Instance]:
    if not is_obj(value):
        return None
    return Instance(
        error=error_of(value), harvester_id=text(value.get("harvester_id")),
        start=parse_utc(value.get("start")),
        last_heartbeat=parse_utc(value.get("last_heartbeat")),
        heartbeat_age_s=integer(value.get("heartbeat_age_s")),
        heartbeat_ahead_s=integer(value.get("heartbeat_ahead_s")),
        version=text(value.get("version")), commit_stamp=text(value.get("commit_stamp")),
        heartbeat_from=text(value.get("heartbeat_from")))


def _queue_state(value: Any) -> QueueState:
    found = obj(value)
    return QueueState(text(found.get("status")), boolean(found.get("active")),
                      pilot_dispatch(found.get("pilot_dispatch")))


def _dropped(value: Any) -> DroppedQueue:
    found = obj(value)
    return DroppedQueue(text(found.get("queue")), text(found.get("message")),
                        boolean(found.get("fatal")))


def queue_status(value: Any) -> Optional[QueueStatus]:
    if not is_obj(value):
        return None
    dropped = value.get("dropped")
    return QueueStatus(
        error=error_of(value), source=text(value.get("source")),
        queues=Entries(obj(value.get("queues")), _queue_state),
        dropped=tuple(map(_dropped, dropped)) if isinstance(dropped, list) else (),
        unconfigured=texts(value.get("unconfigured")))


def _message(value: Any) -> Optional[DialogMessage]:
    if not is_obj(value):
        return None
    return DialogMessage(parse_utc(value.get("at")), text(value.get("level")),
                         text(value.get("identifier")), text(value.get("message")))


def _module(value: Any) -> DialogModule:
    found = obj(value)
    return DialogModule(integer(found.get("count")), counts(found.get("by_level")),
                        _message(found.get("latest")))


def _kind(value: Any) -> DialogKind:
    found = obj(value)
    return DialogKind(
        module=text(found.get("module")), level=text(found.get("level")),
        kind=text(found.get("kind")), queues=texts(found.get("queues")),
        count=integer(found.get("count")), first=parse_utc(found.get("first")),
        latest=_message(found.get("latest")))


def dialogs(value: Any) -> Optional[Dialogs]:
    if not is_obj(value):
        return None
    kinds = value.get("kinds")
    return Dialogs(
        error=error_of(value), since=parse_utc(value.get("since")),
        window_s=integer(value.get("window_s")), messages=integer(value.get("messages")),
        dated_ahead=integer(value.get("dated_ahead")),
        other_levels=counts(value.get("other_levels")),
        modules=Entries(obj(value.get("modules")), _module),
        kinds=tuple(map(_kind, kinds)) if isinstance(kinds, list) else (),
        kinds_left_out=integer(value.get("kinds_left_out")),
        messages_left_out=integer(value.get("messages_left_out")))
