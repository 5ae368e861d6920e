"""The host record of a harvester no reporter can run beside, built from what it reports to
the PanDA server (Perlmutter's, under PanDA operations' account at NERSC).

`build_record` is pure: the server's rows, the effective queue configuration and the clock
are parameters, and any source may be given as `SourceFailed` instead, which becomes that
part's error field while the rest of the record is still built. The record is schema
version 1 with the optional remote sections (`instance`, `queue_status`, `dialogs`); what only
the harvester's logs, process table and disks could say is an error field naming why.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any, Optional

from clusterwatch import __version__
from clusterwatch.monitor.panda.remote.dialogs import dialogs_section
from clusterwatch.monitor.panda.remote.instance import instance_section
from clusterwatch.monitor.panda.remote.limits import (
    QueueConfig,
    fatal_error,
    launch_limits,
    queue_status,
)
from clusterwatch.monitor.panda.remote.metrics import NO_HOST, service_metrics
from clusterwatch.monitor.panda.remote.times import clock, seconds, utc_text
from clusterwatch.monitor.panda.remote.workers import summarise_workers
from clusterwatch.monitor.panda.server_rows import (
    DialogRow,
    InstanceRow,
    MetricsRow,
    Rows,
    SourceFailed,
    WorkerRow,
    WorkerStatsRow,
)
from clusterwatch.reporter.monitor_surface import SCHEMA_VERSION

BUILDER_VERSION = f"remote-builder {__version__}"
DEFAULT_INTERVAL = dt.timedelta(minutes=5)  # the builder's timer period
NO_LOGS = "remote harvester: no logs readable (it runs under another account, on another host)"
_ONLY_LOGS = {
    "fetching": "job fetching is in the job fetcher's log only",
    "adjustment": "the limit the worker adjuster applied is in its log only "
                  "(harvester_db.launch_limits has the limit in force from the configuration)",
    "communicator": "failed calls to the PanDA server are in the communicator's log only",
    "propagator": "failed calls to the PanDA server are in the propagator's log only",
}


@dataclass(frozen=True)
class ServerRows:
    """What the PanDA server's harvester tables gave, each table's rows or why not."""

    instances: Rows[InstanceRow]
    workers: Rows[WorkerRow]
    dialogs: Rows[DialogRow]
    metrics: Rows[MetricsRow]
    worker_stats: Rows[WorkerStatsRow]

    def sites(self, harvester_id: str) -> set[str]:
        """The PanDA queues the worker and worker stats rows name for this harvester."""
        return ({row["computingsite"] for row in _mine(self.workers, "harvesterid", harvester_id)
                 if row["computingsite"]}
                | {row["computingsite"]
                   for row in _mine(self.worker_stats, "harvester_id", harvester_id)})

    def any_besides_instances(self, harvester_id: str) -> bool:
        """Whether any table but harvester_instances has (or may have, unread) a row."""
        tables = ((self.workers, "harvesterid"), (self.dialogs, "harvester_id"),
                  (self.metrics, "harvester_id"), (self.worker_stats, "harvester_id"))
        return any(isinstance(rows, SourceFailed) or _mine(rows, column, harvester_id)
                   for rows, column in tables)


def _mine(rows: Rows[Any], column: str, harvester_id: str) -> list[Any]:
    """The rows of this harvester (none when the table could not be read)."""
    if isinstance(rows, SourceFailed):
        return []
    return [row for row in rows if row[column] == harvester_id]


def build_record(harvester_id: str, key: str, rows: ServerRows, queue_config: QueueConfig,
                 now: dt.datetime, since: Optional[dt.datetime] = None,
                 queue_config_source: Optional[str] = None,
                 collect_seconds: float = 0.0) -> dict[str, Any]:
    """The record of harvester `harvester_id`, stored under `key`, for the interval
    `(since, now]` (default: the five minutes before `now`)."""
    now = clock(now)
    since = now - DEFAULT_INTERVAL if since is None else clock(since)
    seen = rows.sites(harvester_id)
    queues = set(seen) if isinstance(queue_config, SourceFailed) else seen | set(
        queue_config.queues)
    workers = summarise_workers(harvester_id, rows.workers, queues, now, since)
    metrics = service_metrics(harvester_id, rows.metrics, now)
    database: dict[str, Any] = {
        "launch_limits": launch_limits(queue_config, harvester_id, rows.worker_stats,
                                       workers.running, workers.last_submitted, now),
        **workers.parts,
        "service_metrics": metrics,
    }
    if isinstance(queue_config, SourceFailed):
        database["queue_config_error"] = queue_config.reason
    elif queue_config.fatal:
        database["queue_config_error"] = fatal_error()
    record: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "host": key,
        # The login node the harvester last reported metrics from (its own FQDN);
        # harvester_instances.hostname is only where its heartbeat came from.
        "hostname": _login_node(metrics),
        "collected_at": utc_text(now),
        "reporter_version": BUILDER_VERSION,
        "interval": {"since": utc_text(since), "seconds": max(seconds(now, since), 0),
                     "first_run": False},
        "fetching": _only_in_logs("fetching"),
        "submission": dict(workers.submission, read={"error": NO_LOGS}),
        "adjustment": _only_in_logs("adjustment"),
        "failed_calls": {daemon: _only_in_logs(daemon)
                         for daemon in ("communicator", "propagator")},
        "daemons": {"error": f"{NO_LOGS}: log freshness is not known"},
        "processes": {"error": "remote harvester: its process table is not readable (it runs "
                               "under another account, on another host)"},
        "harvester_db": database,
        "health": {"volumes": {"error": "remote harvester: its disks are not readable; "
                                        "harvester_db.service_metrics has the disk use it "
                                        "reports per login node"}},
        "delivery": {"backlog": 0},  # stored by the builder itself: nothing waits
        "collect_seconds": round(max(collect_seconds, 0.0), 3),
        "instance": instance_section(harvester_id, rows.instances, now,
                                     nothing_else=not rows.any_besides_instances(harvester_id)),
        "queue_status": queue_status(queue_config, seen, queue_config_source),
        "dialogs": dialogs_section(harvester_id, rows.dialogs, queues, now),
    }
    return record


def _login_node(metrics: dict[str, Any]) -> str:
    host = metrics.get("hostName")
    return host if isinstance(host, str) and host != NO_HOST else ""


def _only_in_logs(what: str) -> dict[str, Any]:
    return {"read": {"error": NO_LOGS}, "error": f"{NO_LOGS}: {_ONLY_LOGS[what]}"}
