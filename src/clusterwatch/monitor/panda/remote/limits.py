"""The remote record's `queue_status` section and `harvester_db.launch_limits`, from the
effective queue configuration (`clusterwatch.reporter.queue_config`) and the PanDA server's
`harvester_worker_stats`.

`launch_limits` keeps the reporter's per-queue shape (its `pq_table` columns) and adds
`config` (the queue as the harvester runs it: map type, run mode, every limit sanitised, the
limit in force with its derivation, notes) and `new_workers`. The limit in force takes the
queue's running workers as `harvester_workers` has them (live, status `running`).

`new_workers` is `to_submit` from `harvester_worker_stats`, with what it means. It is not
the worker adjuster's decision: it is the harvester's `pq_table.nNewWorkers`, which only the
PanDA server's `setNWorkers` commands set (UPS, run mode `slave`); in run mode `self` it is 0,
and the adjuster's own number is in its log alone. (The reporter's `nNewWorkers` is the same
column.) The table is a snapshot each harvester replaces every 5 minutes; the server itself
ignores rows older than 4 hours, and so `stale` says.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any, Optional, Union

from clusterwatch.monitor.panda.remote.times import server_time, utc_text
from clusterwatch.monitor.panda.server_rows import Rows, SourceFailed, WorkerStatsRow
from clusterwatch.reporter.monitor_surface import (
    FATAL,
    EffectiveQueue,
    QueueConfigSet,
    queue_status_section,
    unreadable_section,
)

STATS_STALE_AFTER = dt.timedelta(hours=4)
TO_SUBMIT = "to_submit"
QueueConfig = Union[QueueConfigSet, SourceFailed]

_SELF_MODE = ("run mode self: to_submit is 0 here; the worker adjuster's own number of new "
              "workers is in its log only")
_COMMANDED = ("run mode {mode}: to_submit is what the PanDA server's setNWorkers commands "
              "left to submit (pq_table nNewWorkers), not the worker adjuster's decision")


def queue_status(config: QueueConfig, seen: set[str],
                 source: Optional[str]) -> dict[str, Any]:
    """`queue_status`; `seen`: the queues the server's rows name."""
    if isinstance(config, SourceFailed):
        return unreadable_section(config.reason, source)
    return queue_status_section(config, source, seen)


def fatal_error() -> str:
    return FATAL


def launch_limits(config: QueueConfig, harvester_id: str, stats: Rows[WorkerStatsRow],
                  running: Optional[Mapping[str, int]], last_submitted: Mapping[str, str],
                  now: dt.datetime) -> dict[str, Any]:
    if isinstance(config, SourceFailed):
        return {"error": f"queue configuration: {config.reason}"}
    to_submit = _to_submit(harvester_id, stats, server_time(now))
    return {name: _entry(queue, to_submit, running, last_submitted)
            for name, queue in sorted(config.queues.items())}


def _entry(queue: EffectiveQueue, to_submit: Union[dict[str, Any], str],
           running: Optional[Mapping[str, int]],
           last_submitted: Mapping[str, str]) -> dict[str, Any]:
    values = queue.limits.values
    limits = {"nQueueLimitWorker": values["nQueueLimitWorker"],
              "maxWorkers": values["maxWorkers"], "nQueueLimitJob": values["nQueueLimitJob"]}
    new_workers = _new_workers(queue, to_submit)
    by_type = {name: dict(limits, nNewWorkers=count)
               for name, count in new_workers.pop("by_type", {}).items()}
    return dict(
        limits, nNewWorkers=new_workers.get(TO_SUBMIT), siteName=queue.name,
        jobFetchTime=None,  # fetching is in the job fetcher's log only
        submitTime=last_submitted.get(queue.name), by_type=by_type,
        config=queue.to_record(None if running is None else running.get(queue.name, 0)),
        new_workers=new_workers)


def _new_workers(queue: EffectiveQueue,
                 to_submit: Union[dict[str, Any], str]) -> dict[str, Any]:
    if isinstance(to_submit, str):
        return {"error": to_submit}
    found = to_submit.get(queue.name)
    meaning = _SELF_MODE if queue.run_mode == "self" else _COMMANDED.format(mode=queue.run_mode)
    if found is None:
        return {TO_SUBMIT: None, "at": None, "stale": None, "meaning": meaning,
                "missing": "no harvester_worker_stats row for this queue"}
    return dict(found, meaning=meaning)


def _to_submit(harvester_id: str, stats: Rows[WorkerStatsRow],
               now: dt.datetime) -> Union[dict[str, Any], str]:
    """Per queue: to_submit summed, by "jobType/resourceType", the snapshot's time; or why
    the table could not be read."""
    if isinstance(stats, SourceFailed):
        return f"harvester_worker_stats: {stats.reason}"
    sites: dict[str, dict[str, Any]] = {}
    for row in stats:
        if row["harvester_id"] != harvester_id:
            continue
        site = sites.setdefault(row["computingsite"], {TO_SUBMIT: 0, "at": None, "by_type": {}})
        at = server_time(row["lastupdate"])
        if site["at"] is None or at > site["at"]:
            site["at"] = at
        if row["status"] == TO_SUBMIT:
            count = row["n_workers"] or 0
            site[TO_SUBMIT] += count
            kind = f"{row['jobtype']}/{row['resourcetype']}"
            site["by_type"][kind] = site["by_type"].get(kind, 0) + count
    for site in sites.values():
        site["stale"] = now - site["at"] > STATS_STALE_AFTER
        site["at"] = utc_text(site["at"])
    return sites
