"""The regulation parts of `harvester_db` (telemetry 1.3): worker starts, the job-demand
cache, and each queue's worker-limit fields with the limit in force.

`harvester_db` runs the queries; this module turns their typed rows into record parts and
adds to `launch_limits` what the queue configuration says. Facts (HSF/harvester, see the
reference "2. panda_queueconfig.json and the worker limit"):

- a worker started when `work_table.startTime` is set; it is counted in the interval its
  start falls in, whatever its status now (a worker may start and end within one interval);
- the worker adjuster reads the activated-job counts from `cache_table`, which the cacher
  refreshes every 10 minutes by default: `lastUpdate` (naive UTC) per `mainKey` is the age
  of the demand the adjuster acts on. The `data` blob is never read;
- the limit in force is `get_worker_limits`'s: the effective (template-merged, sanitised)
  limits and, for a ratio, the queue's running workers (`work_table` status `running` of its
  computingSite, as in `workers_now`).

Python 3.6 compatible, standard library only (see the package docstring).
"""

from typing import Any, Dict, List, Optional

from clusterwatch.reporter.queue_config import QueueConfigSet

ADJUSTER_CACHE_KEYS = ("job_statistics.json", "job_statistics_new.json")
AGE = "age_s"  # the column harvester_db computes as the run's time minus lastUpdate
CONFIG_LIMITS = ("nQueueLimitWorkerRatio", "nQueueLimitWorkerMin", "nQueueLimitWorkerMax")


def worker_starts(rows: List[Dict[str, Any]]) -> Dict[str, Any]:
    """Per computingSite: workers whose startTime is in the interval, by their status now."""
    sites = {}  # type: Dict[str, Dict[str, Any]]
    for row in rows:
        site = "(null)" if row["computingSite"] is None else row["computingSite"]
        entry = sites.setdefault(site, {"started": 0, "by_status": {}})
        status = "(null)" if row["status"] is None else row["status"]
        entry["started"] += row["COUNT(*)"]
        entry["by_status"][status] = entry["by_status"].get(status, 0) + row["COUNT(*)"]
    return sites


def job_demand_cache(rows: List[Dict[str, Any]]) -> Dict[str, Any]:
    """Per cache key: its subKey, last update and age in seconds (negative: dated after the
    run's time, so the database's clock or ours is off). The adjuster's two keys are always
    listed, with nulls when the cacher never stored them."""
    keys = {name: {"subKey": None, "lastUpdate": None, "age_s": None}
            for name in ADJUSTER_CACHE_KEYS}  # type: Dict[str, Any]
    for row in rows:
        keys["(null)" if row["mainKey"] is None else row["mainKey"]] = {
            "subKey": row["subKey"], "lastUpdate": row["lastUpdate"], "age_s": row[AGE]}
    return keys


def add_limits_in_force(section: Dict[str, Any], config_set: Optional[QueueConfigSet],
                        config_error: Optional[str]) -> None:
    """Give each `launch_limits` queue the effective ratio, minimum and maximum and the limit
    in force with its derivation (in place); `config_error` says why there is no config."""
    limits = section.get("launch_limits")
    if not isinstance(limits, dict) or "error" in limits:
        return
    workers_now = section.get("workers_now")
    for name, queue in limits.items():
        effective = config_set.queues.get(name) if config_set is not None else None
        if effective is None:
            queue.update((field, None) for field in CONFIG_LIMITS)
            queue["limit_in_force"] = {"error": config_error or (
                "the queue configuration holds no queue {} (the harvester's pq_table keeps "
                "queues it no longer runs)".format(name))}
            continue
        queue.update((field, effective.limits.values[field]) for field in CONFIG_LIMITS)
        queue["limit_in_force"] = effective.limit_in_force(
            _running(workers_now, queue.get("siteName") or name)).to_record()


def _running(workers_now: Any, site: str) -> Optional[int]:
    """The site's running workers; None when workers_now could not be read."""
    if not isinstance(workers_now, dict) or "error" in workers_now:
        return None
    counts = workers_now.get(site)
    return counts.get("running", 0) if isinstance(counts, dict) else 0

