"""What the queue page shows of a remote harvester's record (one built from the PanDA server,
`clusterwatch.monitor.panda.remote.builder`): the heartbeat, the queue's effective status, the
limit in force with its derivation, `to_submit` with what it means, the service metrics of
each login node, the messages the harvester sent about this queue, and the parts only its logs
could say, each with the record's reason.

A reporter's record has no `instance` section: `remote_panel` is then None and the page shows
the panel it always did.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Optional

from clusterwatch.monitor.core.humanize import duration_text
from clusterwatch.monitor.core.stamps import Stamp, stamp
from clusterwatch.monitor.pages.queue_logs import Submission
from clusterwatch.monitor.pages.why import Level, Why, WhyKind
from clusterwatch.monitor.record.harvester_db import DbPart
from clusterwatch.monitor.record.host_record import HostRecord
from clusterwatch.monitor.record.reading import Counts
from clusterwatch.monitor.record.regulation import LimitInForce, WorkerStarts
from clusterwatch.monitor.record.remote_harvester_db import HostMetrics, ServiceMetrics
from clusterwatch.monitor.record.remote_sections import (
    DialogKind,
    Instance,
    QueueState,
    QueueStatus,
)

# The harvester sends a heartbeat about every 10 minutes: three missed is no longer live.
HEARTBEAT_STALE_S = 1800


@dataclass(frozen=True)
class LoginNode:
    host: str
    measured: Optional[Stamp]
    metrics: str  # the metrics object as JSON text, or the record's error for them


@dataclass(frozen=True)
class RemotePanel:
    instance: Instance
    heartbeat: Optional[Stamp]
    status: Optional[QueueState]
    status_error: Optional[str]
    map_type: Optional[str]
    run_mode: Optional[str]
    template: Optional[str]
    pull_mode: bool
    limit: Optional[LimitInForce]
    notes: tuple[str, ...]
    to_submit: Optional[int]
    to_submit_meaning: Optional[str]
    login_nodes: tuple[LoginNode, ...]
    dialogs_error: Optional[str]
    dialogs: tuple[DialogKind, ...]
    log_only: tuple[tuple[str, str], ...]  # (field, why it is not known)
    # The remote record's own worker counts for this queue, which no other panel shows:
    # started in the interval, and still live after seven days (not counted as live).
    started: str
    overdue: str


def harvester_queues(status: Optional[QueueStatus]) -> frozenset[str]:
    """Every queue the record knows as this harvester's: configured, dropped or named by its
    rows without being configured (`queue_status`, which a queue's slice keeps whole)."""
    if status is None:
        return frozenset()
    names = set(status.queues)
    names.update(status.unconfigured)
    names.update(dropped.queue or "" for dropped in status.dropped)
    names.discard("")
    return frozenset(names)


def kinds_for_queue(kinds: Iterable[DialogKind], queue: str,
                    queues: frozenset[str]) -> tuple[DialogKind, ...]:
    """The kinds of message shown on `queue`'s page: those that name it, and those that name
    none of the harvester's `queues` (a proxy or database message concerns every queue).
    A kind naming only other queues of this harvester is theirs, never shown here."""
    return tuple(kind for kind in kinds
                 if queue in kind.queues or not set(kind.queues) & queues)


def _metrics_text(row: HostMetrics) -> str:
    if row.metrics_error is not None:
        return f"error: {row.metrics_error}"
    return json.dumps(row.metrics, sort_keys=True) if row.metrics is not None else "—"


def _login_nodes(metrics: ServiceMetrics, now: dt.datetime) -> tuple[LoginNode, ...]:
    return tuple(LoginNode(host, stamp(row.creationTime, now), _metrics_text(row))
                 for host, row in sorted(metrics.by_host.items()))


def _tally(counts: dict[str, int]) -> str:
    by_most = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return ", ".join(f"{count} {status}" for status, count in by_most) or "none"


def worker_tally(part: Optional[DbPart[Counts]], sites: Iterable[str]) -> str:
    """A `{site: {status: n}}` part of `harvester_db` for a queue's `sites` in a line:
    "12 running, 1 idle", "none", the part's error, or "not in this record" (an older slice
    or record lacks it)."""
    if part is None:
        return "not in this record"
    if part.error is not None:
        return f"error: {part.error}"
    counts: dict[str, int] = {}
    for site in sites:
        for status, count in part.entries.get(site, ()):
            counts[status] = counts.get(status, 0) + count
    return _tally(counts)


def starts_tally(part: Optional[DbPart[WorkerStarts]], sites: Iterable[str]) -> str:
    """The workers started in the interval for a queue's `sites`, as `worker_tally` words a
    part, from the typed `worker_starts` (which also reads an older `workers_started`)."""
    if part is None:
        return "not in this record"
    if part.error is not None:
        return f"error: {part.error}"
    counts: dict[str, int] = {}
    for site in sites:
        entry = part.entries.get(site)
        for status, count in entry.by_status if entry is not None else ():
            counts[status] = counts.get(status, 0) + count
    return _tally(counts)


def _log_only(record: HostRecord) -> tuple[tuple[str, str], ...]:
    """The record sections whose error says what only the harvester's logs or host could
    say, by section name."""
    found = [("fetching", record.fetching.error), ("adjustment", record.adjustment.error),
             ("daemons", record.daemons.error), ("processes", record.processes.error)]
    found += [(f"failed_calls.{daemon}", calls.error)
              for daemon, calls in record.failed_calls.by_daemon()]
    return tuple((name, error) for name, error in found if error is not None)


def remote_panel(record: HostRecord, queue: str, now: dt.datetime) -> Optional[RemotePanel]:
    """The remote harvester's part of `queue`'s panel; None for a reporter's record."""
    if record.instance is None:
        return None
    database = record.harvester_db
    limits = database.launch_limits.entries.get(queue)
    config = limits.config if limits is not None else None
    new_workers = limits.new_workers if limits is not None else None
    sites = database.queue_sites(queue)
    status = record.queue_status
    dialogs = record.dialogs
    return RemotePanel(
        instance=record.instance,
        heartbeat=stamp(record.instance.last_heartbeat, now),
        status=status.queues.get(queue) if status is not None else None,
        status_error=status.error if status is not None else None,
        map_type=config.mapType if config else None,
        run_mode=config.runMode if config else None,
        template=config.template if config else None,
        pull_mode=config.pull_mode if config else False,
        limit=config.limit_in_force if config else None,
        notes=config.notes if config else (),
        to_submit=new_workers.to_submit if new_workers else None,
        to_submit_meaning=new_workers.meaning if new_workers else None,
        login_nodes=_login_nodes(database.service_metrics, now),
        dialogs_error=dialogs.error if dialogs is not None else "no dialogs section",
        dialogs=kinds_for_queue(dialogs.kinds, queue, harvester_queues(status))
        if dialogs is not None else (),
        log_only=_log_only(record),
        started=starts_tally(database.worker_starts, sites),
        overdue=worker_tally(database.workers_overdue, sites))


def remote_why(remote: RemotePanel, submit: Submission) -> Why:
    """Why the queue gets no work, from what the PanDA server knows of a remote harvester
    (its fetcher's log, which the reporter's rule starts from, is not readable)."""
    age = remote.instance.heartbeat_age_s
    if remote.instance.error is not None:
        return Why(WhyKind.STALE, f"no heartbeat: {remote.instance.error}", Level.BAD)
    if age is not None and age > HEARTBEAT_STALE_S:
        return Why(WhyKind.STALE, f"no heartbeat from the harvester for {duration_text(age)}",
                   Level.BAD)
    if remote.status is not None and remote.status.active is False:
        return Why(WhyKind.BLOCKED, f"queue status {remote.status.status}: the harvester runs no "
                   "workers for it", Level.BAD)
    if remote.limit is not None and remote.limit.value == 0:
        return Why(WhyKind.BLOCKED, f"the limit in force is 0 ({remote.limit.derivation})",
                   Level.BAD)
    if submit.submit_failures and not submit.workers_submitted:
        return Why(WhyKind.SUBMIT_FAILING, f"worker submission failing: {submit.submit_failures} "
                   "failures and no worker submitted in the last interval", Level.BAD)
    submitted = f"{submit.workers_submitted or 0} workers submitted in the last interval"
    if remote.pull_mode:
        return Why(WhyKind.WORKING, f"a pull-mode queue: its pilots fetch their own jobs; "
                   f"{submitted}", Level.OK)
    return Why(WhyKind.UNCLEAR, f"no block the PanDA server shows; {submitted} (its job fetching "
               "is in its logs only)", Level.WARN)
