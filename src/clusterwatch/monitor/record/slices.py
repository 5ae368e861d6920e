"""What each page reads of a record, cut out once at ingest.

A latest record is up to a few hundred KB, most of it detail no page shows. When a record
becomes its key's latest, ingest stores beside the index rows the record's parts a page
reads: `queue_slice` on each `LatestQueue` row (what the queue page shows of that queue),
`host_summary` on the `LatestReport` row (what the hosts overview shows). Both keep the
record's own shape, so `host_record.parse_record` reads them as it reads whole records;
tests check that a page built from a slice equals the page built from the whole record.

What a slice keeps is a decision about the record, so it is made here (`REASONS_SHOWN`,
`EXAMPLES_SHOWN`), and the pages read those numbers from here, never the other way round.

These functions are the one statement of "what a page needs": ingest, the data migration
that fills existing rows and the tests all call them. A slice carries `SLICE_VERSION`; a
page finding another version (or none) reads the whole record instead, so changing what a
page reads means changing these functions and the version, never a silently short slice.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Optional

from clusterwatch.monitor.record.reading import integer, obj
from clusterwatch.monitor.record.sections import (
    CALL_DAEMONS,
    LOG_SECTIONS,
    REQUIRED_SECTIONS,
    queue_sites,
)

SLICE_VERSION = 3  # 2: a remote harvester's instance, queue_status, dialogs, service_metrics;
# 3: telemetry 1.3's worker_starts and job_demand_cache, the summary's interval
# Reasons a queue panel shows, most workers first, and the examples of each; the rest are
# summed in one line ("and K more reasons (M workers)"). A queue served by 50 harvesters
# would otherwise be a page of thousands of reasons. They decide what a slice keeps, so they
# are stated here, with the slicing, and the pages read them from here.
REASONS_SHOWN = 5
EXAMPLES_SHOWN = 3
_VOLUME_FIELDS = ("error", "used_percent", "avail_bytes", "total_bytes")
_DELIVERY_FIELDS = ("backlog", "dropped", "set_aside", "reasons", "last_error",
                    "last_error_at", "oldest_at", "error")


def _pick(value: Mapping[str, Any], *names: str) -> dict[str, Any]:
    return {name: value[name] for name in names if name in value}


def _log_section(value: Any, queue: Optional[str]) -> dict[str, Any]:
    """A log section's error, its log's read error and (for a queue) the queue's entry."""
    if not isinstance(value, Mapping):
        return {}  # the builders read a section that is no object as an empty one
    found = _pick(value, "error")
    read = value.get("read")
    if isinstance(read, Mapping) and "error" in read:
        found["read"] = {"error": read["error"]}
    queues = value.get("queues")
    if queue is not None and isinstance(queues, Mapping) and queue in queues:
        found["queues"] = {queue: queues[queue]}
    return found


def _failed_calls(value: Any) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for daemon in CALL_DAEMONS:
        part = obj(value).get(daemon)
        if not isinstance(part, Mapping):
            continue
        kept = _pick(part, "error", "failed", "by_call_and_class")
        read, last = part.get("read"), part.get("last")
        if isinstance(read, Mapping) and "error" in read:
            kept["read"] = {"error": read["error"]}
        if isinstance(last, Mapping):
            kept["last"] = _pick(last, "line", "at")
        found[daemon] = kept
    return found


def _reasons(reasons: Mapping[str, Any]) -> dict[str, Any]:
    """The reasons a panel shows, whole (examples cut to those shown); of the others only
    their count, which the panel sums ("and K more reasons (M workers)")."""
    ranked = sorted(reasons.items(),
                    key=lambda item: (-(integer(obj(item[1]).get("count")) or 0), str(item[0])))
    found: dict[str, Any] = {}
    for index, (name, group) in enumerate(ranked):
        if not isinstance(group, Mapping):
            found[name] = {}
        elif index < REASONS_SHOWN:
            found[name] = dict(group)
            if isinstance(group.get("examples"), list):
                found[name]["examples"] = group["examples"][:EXAMPLES_SHOWN]
        else:
            found[name] = _pick(group, "count")
    return found


def _not_finished(entry: Any) -> Any:
    if not isinstance(entry, Mapping):
        return entry
    kept = _pick(entry, "workers")
    if "reasons" in entry:
        reasons = entry["reasons"]
        kept["reasons"] = _reasons(reasons) if isinstance(reasons, Mapping) else {}
    return kept


def _queue_database(value: Any, queue: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        return {}
    # workers_not_finished_read: one small object for every queue (are the counts short?).
    found = _pick(value, "error", "queue_config_error", "service_metrics",
                  "workers_not_finished_read")
    sites = queue_sites(value, queue)
    cache = value.get("job_demand_cache")
    if cache is not None:  # a few keys, the same for every queue: kept whole
        found["job_demand_cache"] = cache if isinstance(cache, Mapping) else {}
    for part, names in (("launch_limits", [queue]), ("workers_now", sites),
                        ("workers_ended", sites), ("workers_not_finished", sites),
                        ("worker_starts", sites), ("workers_started", sites),
                        ("workers_overdue", sites)):  # the last two: a remote record's
        if value.get(part) is None:
            continue  # absent and null read alike, except for not-finished (below)
        content = value[part]
        if not isinstance(content, Mapping):
            found[part] = {}
            continue
        kept = _pick(content, "error")
        for name in names:
            # A queue named "error" is already kept whole: the page reads it as the error.
            if name in content and name not in kept:
                kept[name] = (_not_finished(content[name]) if part == "workers_not_finished"
                              else content[name])
        found[part] = kept
    candidates = value.get("workers_not_finished_candidates")
    if value.get("workers_not_finished") is None and isinstance(candidates, list):
        # An older reporter's raw rows: only this queue's (the page groups them itself).
        found["workers_not_finished_candidates"] = [
            row for row in candidates
            if isinstance(row, Mapping) and row.get("computingSite") in sites]
    return found


def queue_slice(record: Mapping[str, Any], queue: str) -> dict[str, Any]:
    """What the queue page (`pages.queue_page.harvester_panel`) reads of `record` for `queue`."""
    found: dict[str, Any] = _pick(record, "hostname", "interval")
    for section in LOG_SECTIONS:
        if section in record:
            found[section] = _log_section(record[section], queue)
    pushes = obj(record.get("submission")).get("recent_pushes")
    if isinstance(pushes, list) and "submission" in found:
        found["submission"]["recent_pushes"] = [
            push for push in pushes if obj(push).get("queue") == queue]
    if "failed_calls" in record:
        found["failed_calls"] = _failed_calls(record["failed_calls"])
    if "harvester_db" in record:
        found["harvester_db"] = _queue_database(record["harvester_db"], queue)
    # A remote harvester's sections (pages.remote_panel), kept whole: a heartbeat, a status
    # per queue and at most 100 kinds of message, which the page filters for the queue.
    found.update(_pick(record, "instance", "queue_status", "dialogs"))
    if "queue_status" in found:
        found["queue_status"] = _one_dispatch(found["queue_status"], queue)
    for section in ("daemons", "processes"):  # their errors say what only the logs could
        if "instance" in record and isinstance(record.get(section), Mapping):
            found[section] = _pick(record[section], "error")
    return {"version": SLICE_VERSION, "record": found}


def _one_dispatch(value: Any, queue: str) -> Any:
    """`queue_status` with every queue's status (the remote panel needs each name) but only
    `queue`'s pilot dispatch: a harvester's N queue slices would otherwise each carry N
    template readings."""
    queues = obj(value).get("queues")
    if not isinstance(queues, Mapping):
        return value
    kept = {name: entry if name == queue or not isinstance(entry, Mapping) else
            {key: part for key, part in entry.items() if key != "pilot_dispatch"}
            for name, entry in queues.items()}
    return dict(value, queues=kept)


def _daemons(value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        return {}
    found = _pick(value, "error")
    for log, entry in value.items():
        if log != "error" and isinstance(entry, Mapping) and "error" in entry:
            found[log] = {"error": entry["error"]}
    return found


def _host_database(value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        return {}
    found = _pick(value, "error", "queue_config_error")
    for part, content in value.items():
        if part not in found and isinstance(content, Mapping) and "error" in content:
            found[part] = {"error": content["error"]}
    return found


def _health(value: Any) -> dict[str, Any]:
    volumes = obj(value).get("volumes")
    if not isinstance(volumes, Mapping):
        return {}
    return {"volumes": {mount: _pick(entry, *_VOLUME_FIELDS) if isinstance(entry, Mapping)
                        else entry for mount, entry in volumes.items()}}


def host_summary(record: Mapping[str, Any]) -> dict[str, Any]:
    """What the hosts overview (`pages.hosts_page.host_row`) reads of `record`."""
    found: dict[str, Any] = _pick(record, "hostname", "reporter_version", "interval")
    readers: dict[str, Callable[[Any], dict[str, Any]]] = {
        **{section: (lambda value: _log_section(value, None)) for section in LOG_SECTIONS},
        "failed_calls": _failed_calls,
        "daemons": _daemons,
        "processes": lambda value: _pick(obj(value), "error", "count"),
        "harvester_db": _host_database,
        "health": _health,
        "delivery": lambda value: _pick(obj(value), *_DELIVERY_FIELDS),
    }
    assert set(readers) == set(REQUIRED_SECTIONS)
    for section, reader in readers.items():
        if section in record:  # a missing section is a problem the overview names
            found[section] = reader(record[section])
    return {"version": SLICE_VERSION, "record": found}


def sliced(stored: Any) -> Optional[dict[str, Any]]:
    """The record part of a stored slice; None when it is absent or of another version."""
    if isinstance(stored, Mapping) and stored.get("version") == SLICE_VERSION:
        record = stored.get("record")
        if isinstance(record, dict):
            return record
    return None
