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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Optional

from clusterwatch.monitor.core.humanize import duration_text
from clusterwatch.monitor.core.stamps import Stamp, stamp
from clusterwatch.monitor.pages.queue_logs import Submission
from clusterwatch.monitor.pages.why import Why
from clusterwatch.monitor.record.host_record import HostRecord
from clusterwatch.monitor.record.reading import boolean, error_of, integer, obj, text
from clusterwatch.monitor.record.remote_sections import DialogKind, Instance, QueueState
from clusterwatch.monitor.record.sections import queue_sites

# The record sections whose error says what only the harvester's logs or host could say.
LOG_ONLY_FIELDS = ("fetching", "adjustment", "daemons", "processes")
CALL_DAEMONS = ("communicator", "propagator")
# The harvester sends a heartbeat about every 10 minutes: three missed is no longer live.
HEARTBEAT_STALE_S = 1800


@dataclass(frozen=True)
class LimitInForce:
    value: Optional[int]
    at_most: Optional[int]
    running_workers: Optional[int]
    derivation: Optional[str]


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


def harvester_queues(raw: Mapping[str, Any]) -> frozenset[str]:
    """Every queue the record knows as this harvester's: configured, dropped or named by its
    rows without being configured (`queue_status`, which a queue's slice keeps whole)."""
    status = obj(raw.get("queue_status"))
    names = set(obj(status.get("queues")))
    names.update(name for name in status.get("unconfigured") or () if isinstance(name, str))
    dropped = status.get("dropped")
    names.update(text(obj(entry).get("queue")) or "" for entry in
                 (dropped if isinstance(dropped, list) else ()))
    names.discard("")
    return frozenset(names)


def kinds_for_queue(kinds: Iterable[DialogKind], queue: str,
                    queues: frozenset[str]) -> tuple[DialogKind, ...]:
    """The kinds of message shown on `queue`'s page: those that name it, and those that name
    none of the harvester's `queues` (a proxy or database message concerns every queue).
    A kind naming only other queues of this harvester is theirs, never shown here."""
    return tuple(kind for kind in kinds
                 if queue in kind.queues or not set(kind.queues) & queues)


def _limit(config: Mapping[str, Any]) -> Optional[LimitInForce]:
    found = config.get("limit_in_force")
    if not isinstance(found, Mapping):
        return None
    return LimitInForce(integer(found.get("value")), integer(found.get("at_most")),
                        integer(found.get("running_workers")), text(found.get("derivation")))


def _metrics_text(value: Any) -> str:
    error = error_of(value)
    if error is not None:
        return f"error: {error}"
    return json.dumps(value, sort_keys=True) if isinstance(value, Mapping) else "—"


def _login_nodes(metrics: Mapping[str, Any], now: dt.datetime) -> tuple[LoginNode, ...]:
    by_host = obj(metrics.get("by_host"))
    return tuple(LoginNode(str(host), stamp(obj(row).get("creationTime"), now),
                           _metrics_text(obj(row).get("metrics")))
                 for host, row in sorted(by_host.items()))


def worker_tally(database: Mapping[str, Any], part: str, queue: str) -> str:
    """`harvester_db.<part>` for `queue`'s sites in a line: "12 running, 1 idle", "none",
    the part's error, or "not in this record" (an older slice or record lacks it)."""
    if part not in database:
        return "not in this record"
    content = database[part]
    error = error_of(content)
    if error is not None:
        return f"error: {error}"
    counts: dict[str, int] = {}
    for site in queue_sites(database, queue):
        for status, count in obj(obj(content).get(site)).items():
            if integer(count) is not None:
                counts[status] = counts.get(status, 0) + count
    by_most = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return ", ".join(f"{count} {status}" for status, count in by_most) or "none"


def starts_tally(record: HostRecord, database: Mapping[str, Any], queue: str) -> str:
    """The workers started in the interval for `queue`'s sites, as `worker_tally` words a
    part, from the typed `worker_starts` (which also reads an older `workers_started`)."""
    part = record.harvester_db.worker_starts
    if part is None:
        return "not in this record"
    if part.error is not None:
        return f"error: {part.error}"
    counts: dict[str, int] = {}
    for site in queue_sites(database, queue):
        entry = part.entries.get(site)
        for status, count in entry.by_status if entry is not None else ():
            counts[status] = counts.get(status, 0) + count
    by_most = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return ", ".join(f"{count} {status}" for status, count in by_most) or "none"


def _log_only(raw: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    found = [(name, error_of(raw.get(name))) for name in LOG_ONLY_FIELDS]
    calls = obj(raw.get("failed_calls"))
    found += [(f"failed_calls.{daemon}", error_of(calls.get(daemon))) for daemon in CALL_DAEMONS]
    return tuple((name, error) for name, error in found if error is not None)


def remote_panel(record: HostRecord, raw: Mapping[str, Any], queue: str,
                 now: dt.datetime) -> Optional[RemotePanel]:
    """The remote harvester's part of `queue`'s panel; None for a reporter's record."""
    if record.instance is None:
        return None
    database = obj(raw.get("harvester_db"))
    limits = obj(obj(database.get("launch_limits")).get(queue))
    config, new_workers = obj(limits.get("config")), obj(limits.get("new_workers"))
    status = record.queue_status
    notes = config.get("notes")
    dialogs = record.dialogs
    return RemotePanel(
        instance=record.instance,
        heartbeat=stamp(record.instance.last_heartbeat, now),
        status=status.queues.get(queue) if status is not None else None,
        status_error=status.error if status is not None else None,
        map_type=text(config.get("mapType")), run_mode=text(config.get("runMode")),
        template=text(config.get("template")),
        pull_mode=boolean(config.get("pull_mode")) is True,
        limit=_limit(config),
        notes=tuple(note for note in notes if isinstance(note, str))
        if isinstance(notes, list) else (),
        to_submit=integer(new_workers.get("to_submit")),
        to_submit_meaning=text(new_workers.get("meaning")),
        login_nodes=_login_nodes(obj(database.get("service_metrics")), now),
        dialogs_error=dialogs.error if dialogs is not None else "no dialogs section",
        dialogs=kinds_for_queue(dialogs.kinds, queue, harvester_queues(raw))
        if dialogs is not None else (),
        log_only=_log_only(raw),
        started=starts_tally(record, database, queue),
        overdue=worker_tally(database, "workers_overdue", queue))


def remote_why(remote: RemotePanel, submit: Submission) -> Why:
    """Why the queue gets no work, from what the PanDA server knows of a remote harvester
    (its fetcher's log, which the reporter's rule starts from, is not readable)."""
    age = remote.instance.heartbeat_age_s
    if remote.instance.error is not None:
        return Why("stale", f"no heartbeat: {remote.instance.error}", "bad")
    if age is not None and age > HEARTBEAT_STALE_S:
        return Why("stale", f"no heartbeat from the harvester for {duration_text(age)}", "bad")
    if remote.status is not None and remote.status.active is False:
        return Why("blocked", f"queue status {remote.status.status}: the harvester runs no "
                   "workers for it", "bad")
    if remote.limit is not None and remote.limit.value == 0:
        return Why("blocked", f"the limit in force is 0 ({remote.limit.derivation})", "bad")
    if submit.submit_failures and not submit.workers_submitted:
        return Why("submit_failing", f"worker submission failing: {submit.submit_failures} "
                   "failures and no worker submitted in the last interval", "bad")
    submitted = f"{submit.workers_submitted or 0} workers submitted in the last interval"
    if remote.pull_mode:
        return Why("working", f"a pull-mode queue: its pilots fetch their own jobs; "
                   f"{submitted}", "ok")
    return Why("unclear", f"no block the PanDA server shows; {submitted} (its job fetching "
               "is in its logs only)", "warn")
