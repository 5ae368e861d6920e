"""What a remote record's `harvester_db` holds beyond a reporter's, typed: each queue's
`config` and `new_workers` in `launch_limits`, and each login node's row in
`service_metrics` (whose newest-row shape, `hostName`, `creationTime`, `metrics`, is the
reporter's too).

The builder is `clusterwatch.monitor.panda.remote` (`limits`, `metrics`); the schema leaves
these parts open, so field names are the builder's (a test holds the two together). A value
that is not what it should be reads as absent, never as a failure.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

from clusterwatch.monitor.record.entries import Entries
from clusterwatch.monitor.record.reading import boolean, error_of, integer, is_obj, obj, text, texts
from clusterwatch.monitor.record.regulation import LimitInForce, limit_in_force
from clusterwatch.monitor.record.times import parse_utc


@dataclass(frozen=True)
class QueueConfig:
    """The queue as the harvester runs it (`reporter.queue_config.EffectiveQueue.to_record`):
    templates merged, every limit sanitised, the limit in force with its derivation."""

    template: Optional[str] = None
    status: Optional[str] = None
    active: Optional[bool] = None
    mapType: Optional[str] = None
    pull_mode: bool = False  # NoJob: the pilots fetch their own jobs
    runMode: Optional[str] = None
    limits: Mapping[str, Optional[int]] = field(default_factory=dict)
    limit_in_force: Optional[LimitInForce] = None
    notes: tuple[str, ...] = ()  # what sanitising changed or ignored, and odd values


@dataclass(frozen=True)
class NewWorkers:
    """`to_submit` from the PanDA server's `harvester_worker_stats`, with what it means in the
    queue's run mode; or why the table could not be read (`error`) or has no row (`missing`)."""

    error: Optional[str] = None
    to_submit: Optional[int] = None
    at: Optional[dt.datetime] = None
    stale: Optional[bool] = None  # older than the server itself takes a snapshot for
    meaning: Optional[str] = None
    missing: Optional[str] = None


@dataclass(frozen=True)
class HostMetrics:
    """One host's newest service metrics row."""

    creationTime: Optional[dt.datetime] = None
    age_s: Optional[int] = None
    # The harvester's `sm_table.metrics` object, kept as sent (nobody fixes its shape); None
    # when the row has none or says why not (`metrics_error`).
    metrics: Optional[Mapping[str, Any]] = None
    metrics_error: Optional[str] = field(default=None, metadata={"derived": True})


@dataclass(frozen=True)
class ServiceMetrics:
    """The newest row of the harvester's service metrics (a reporter's record and a remote
    one alike), and a remote record's newest row of each login node."""

    error: Optional[str] = None
    hostName: Optional[str] = None
    creationTime: Optional[dt.datetime] = None
    metrics: Optional[Mapping[str, Any]] = None  # as `HostMetrics.metrics`
    metrics_error: Optional[str] = field(default=None, metadata={"derived": True})
    by_host: Mapping[str, HostMetrics] = field(
        default_factory=dict, metadata={"remote": "the remote builder's, one per login node"})


def queue_config(value: Any) -> Optional[QueueConfig]:
    if not is_obj(value):
        return None
    return QueueConfig(
        template=text(value.get("template")), status=text(value.get("status")),
        active=boolean(value.get("active")), mapType=text(value.get("mapType")),
        pull_mode=value.get("pull_mode") is True, runMode=text(value.get("runMode")),
        limits=Entries(obj(value.get("limits")), integer),  # no page reads them yet
        limit_in_force=limit_in_force(value.get("limit_in_force")),
        notes=texts(value.get("notes")))


def new_workers(value: Any) -> Optional[NewWorkers]:
    if not is_obj(value):
        return None
    return NewWorkers(
        error=error_of(value), to_submit=integer(value.get("to_submit")),
        at=parse_utc(value.get("at")), stale=boolean(value.get("stale")),
        meaning=text(value.get("meaning")), missing=text(value.get("missing")))


def _metrics(value: Any) -> tuple[Optional[Mapping[str, Any]], Optional[str]]:
    """(the metrics object, None), or (None, why there is none)."""
    error = error_of(value)
    return (value if error is None and is_obj(value) else None), error


def _host_metrics(value: Any) -> HostMetrics:
    row = obj(value)
    metrics, error = _metrics(row.get("metrics"))
    return HostMetrics(parse_utc(row.get("creationTime")), integer(row.get("age_s")),
                       metrics, error)


_NO_METRICS = ServiceMetrics()  # shared: frozen


def service_metrics(value: Any) -> ServiceMetrics:
    part = obj(value)
    if not part:
        return _NO_METRICS
    metrics, metrics_error = _metrics(part.get("metrics"))
    return ServiceMetrics(
        error=error_of(part), hostName=text(part.get("hostName")),
        creationTime=parse_utc(part.get("creationTime")),
        metrics=metrics, metrics_error=metrics_error,
        # Every host is a login node, whatever its row holds: the page lists each.
        by_host=Entries(obj(part.get("by_host")), _host_metrics))
