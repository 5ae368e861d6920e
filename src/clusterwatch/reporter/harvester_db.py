"""The record's `harvester_db` section, read from the harvester's MariaDB with the `mysql` client.

The queries and what each part makes of its rows; one client run per collection, through
`mysql_client` (the option file, the READ ONLY session, the typed output). Timestamps are read
in the server's session time zone, as the harvester writes them: naive UTC.
"""



import calendar
import socket
import statistics
import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from clusterwatch.reporter import harvester_regulation as regulation
from clusterwatch.reporter.harvester_cfg import HarvesterConfigError, read_db_settings
from clusterwatch.reporter.mysql_client import (
    Query,
    run_queries,
    sql_in,
    sql_text,
    sql_time,
    typed_row,
)

PARTS = (
    "launch_limits",
    "workers_now",
    "workers_ended",
    "workers_not_finished_candidates",
    "service_metrics",
    "worker_starts",
    "job_demand_cache",
)
LIVE_STATUSES = ("submitted", "running", "ready", "idle", "pending")
FINAL_STATUSES = ("finished", "failed", "cancelled", "missed")
CANDIDATE_WINDOW_S = 24 * 3600
CANDIDATE_LIMIT = 2000  # newest first; workAttributes can be long



def collect_with_config(
    cfg_path: str,
    environ: Mapping[str, str],
    now: float,
    since: float,
    mysql: str = "mysql",
    timeout: float = 30,
    fqdn: Optional[str] = None,
) -> Dict[str, Any]:
    """`collect` with the settings read from `cfg_path`; a config error fills every part."""
    try:
        settings = read_db_settings(cfg_path, environ)
    except HarvesterConfigError as error:
        return {part: {"error": str(error)} for part in PARTS}
    return collect(settings, now, since, mysql=mysql, timeout=timeout, fqdn=fqdn)


def collect(
    settings: Mapping[str, Any],
    now: float,
    since: float,
    mysql: str = "mysql",
    timeout: float = 30,
    fqdn: Optional[str] = None,
) -> Dict[str, Any]:
    """Every part of the section; a part that cannot be read is `{"error": ...}`."""
    if settings.get("engine") != "mariadb":
        reason = f"engine {settings.get('engine')}: only MariaDB is read (through mysql)"
        return {part: {"error": reason} for part in PARTS}
    host_fqdn = fqdn if fqdn is not None else socket.getfqdn()
    queries = _queries(now, since, host_fqdn)
    rows, errors = run_queries(settings, queries, mysql, timeout)
    builders: Dict[str, Callable[[List[Dict[str, Any]]], Any]] = {
        "launch_limits": _launch_limits,
        "workers_now": _workers_now,
        "workers_ended": workers_ended_part,
        "workers_not_finished_candidates": _candidates,
        "service_metrics": lambda found: _service_metrics(found, host_fqdn),
        "worker_starts": regulation.worker_starts,
        "job_demand_cache": regulation.job_demand_cache,
    }
    section = {}  # type: Dict[str, Any]
    for name, columns, _ in queries:
        if name in errors:
            section[name] = {"error": errors[name]}
            continue
        try:
            typed = [typed_row(columns, row) for row in rows.get(name, [])]
            section[name] = builders[name](typed)
        except ValueError as error:
            section[name] = {"error": f"unexpected client output: {error}"}
    return section


def _queries(now: float, since: float, fqdn: str) -> List[Query]:
    window = f"endTime > {sql_time(since)} AND endTime <= {sql_time(now)}"
    started = f"startTime > {sql_time(since)} AND startTime <= {sql_time(now)}"
    day = f"endTime > {sql_time(now - CANDIDATE_WINDOW_S)} AND endTime <= {sql_time(now)}"
    not_finished = (
        f"(status IN {sql_in(FINAL_STATUSES[1:])} OR (status = 'finished'"
        " AND nativeExitCode IS NOT NULL AND nativeExitCode <> 0))"
    )
    return [
        ("launch_limits",
         [("queueName", "text"), ("siteName", "text"), ("jobType", "text"),
          ("resourceType", "text"), ("nQueueLimitWorker", "int"), ("maxWorkers", "int"),
          ("nQueueLimitJob", "int"), ("nNewWorkers", "int"), ("jobFetchTime", "time"),
          ("submitTime", "time")],
         "FROM pq_table ORDER BY queueName, jobType, resourceType"),
        ("workers_now",
         [("computingSite", "text"), ("status", "text"), ("COUNT(*)", "int")],
         f"FROM work_table WHERE status IN {sql_in(LIVE_STATUSES)} GROUP BY computingSite, status"),
        ("workers_ended",
         [("computingSite", "text"), ("status", "text"), ("startTime", "time"),
          ("endTime", "time")],
         f"FROM work_table WHERE {window} AND status IN {sql_in(FINAL_STATUSES)}"),
        ("workers_not_finished_candidates",
         [("workerID", "int"), ("computingSite", "text"), ("queueName", "text"),
          ("status", "text"), ("batchID", "text"), ("nodeID", "text"),
          ("computingElement", "text"), ("workAttributes", "json"), ("diagMessage", "text"),
          ("nativeExitCode", "int"), ("nativeStatus", "text"), ("submitTime", "time"),
          ("startTime", "time"), ("endTime", "time")],
         f"FROM work_table WHERE {day} AND {not_finished}"
         # One row past the limit says whether more did not finish than are read.
         f" ORDER BY endTime DESC, workerID DESC LIMIT {CANDIDATE_LIMIT + 1}"),
        ("service_metrics",
         [("creationTime", "time"), ("metrics", "json")],
         f"FROM sm_table WHERE hostName = {sql_text(fqdn)} ORDER BY creationTime DESC LIMIT 1"),
        # Appended after the older parts so their `at line N` stays what it was.
        ("worker_starts",
         [("computingSite", "text"), ("status", "text"), ("COUNT(*)", "int")],
         f"FROM work_table WHERE {started} GROUP BY computingSite, status"),
        ("job_demand_cache",  # never the data blob: only when each key was refreshed
         [("mainKey", "text"), ("subKey", "text"), ("lastUpdate", "time"),
          (f"TIMESTAMPDIFF(SECOND, lastUpdate, {sql_time(now)}) AS {regulation.AGE}", "int")],
         "FROM cache_table ORDER BY mainKey"),
    ]


def _seconds(utc: str) -> int:
    return calendar.timegm(time.strptime(utc, "%Y-%m-%dT%H:%M:%SZ"))


def _key(value: Optional[str]) -> str:
    return "(null)" if value is None else value


def _launch_limits(rows: List[Dict[str, Any]]) -> Dict[str, Any]:
    limits = ("nQueueLimitWorker", "maxWorkers", "nQueueLimitJob", "nNewWorkers")
    queues = {}  # type: Dict[str, Dict[str, Any]]
    for row in rows:
        queue = queues.setdefault(_key(row["queueName"]), dict(
            {"siteName": row["siteName"], "jobFetchTime": None, "submitTime": None},
            **{name: None for name in limits}, by_type={}))
        job_type = row["jobType"] or "ANY"
        resource_type = row["resourceType"] or "ANY"
        queue["by_type"][f"{job_type}/{resource_type}"] = {name: row[name] for name in limits}
        if (job_type, resource_type) == ("ANY", "ANY"):
            queue.update({name: row[name] for name in limits})
        for name in ("jobFetchTime", "submitTime"):  # same on all rows; latest if not
            if row[name] is not None and (queue[name] is None or row[name] > queue[name]):
                queue[name] = row[name]
    return queues


def _workers_now(rows: List[Dict[str, Any]]) -> Dict[str, Any]:
    sites = {}  # type: Dict[str, Dict[str, int]]
    for row in rows:
        sites.setdefault(_key(row["computingSite"]), {})[_key(row["status"])] = row["COUNT(*)"]
    return sites


def workers_ended_part(rows: List[Dict[str, Any]]) -> Dict[str, Any]:
    """Per site, the interval's ended workers by status and the finished ones' median run;
    the monitor's remote builder makes the same part from the PanDA server's rows."""
    counts = {}  # type: Dict[str, Dict[str, int]]
    runs = {}  # type: Dict[str, List[int]]
    for row in rows:
        site = _key(row["computingSite"])
        by_status = counts.setdefault(site, {})
        by_status[row["status"]] = by_status.get(row["status"], 0) + 1
        runs.setdefault(site, [])
        if row["status"] == "finished" and row["startTime"] and row["endTime"]:
            seconds = _seconds(row["endTime"]) - _seconds(row["startTime"])
            if seconds >= 0:
                runs[site].append(seconds)
    return {
        site: {"by_status": by_status, "finished_median_run_s": _median(runs[site])}
        for site, by_status in counts.items()
    }


def _median(values: List[int]) -> Optional[float]:
    if not values:
        return None
    middle = statistics.median(values)
    return int(middle) if middle == int(middle) else float(middle)


def _candidates(rows: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    found = []
    for row in rows:
        attributes = row.pop("workAttributes")
        batch_log = attributes.get("batchLog") if isinstance(attributes, dict) else None
        row["batchLog"] = batch_log if isinstance(batch_log, str) else None
        found.append(row)
    return found


def capped_candidates(candidates: List[Dict[str, Any]]
                      ) -> Tuple[List[Dict[str, Any]], Dict[str, Any]]:
    """The newest CANDIDATE_LIMIT candidates (rows come newest first), and the part saying how
    many were read and whether more did not finish (`workers_not_finished_read`): past the
    limit the grouped counts are short, and a page must say so."""
    kept = candidates[:CANDIDATE_LIMIT]
    return kept, not_finished_read(len(kept), len(candidates) > len(kept))


def not_finished_read(workers: int, limit_reached: bool) -> Dict[str, Any]:
    """The `workers_not_finished_read` part; the monitor's remote builder makes it too."""
    return {"window_s": CANDIDATE_WINDOW_S, "workers": workers, "limit": CANDIDATE_LIMIT,
            "limit_reached": limit_reached}


def _service_metrics(rows: List[Dict[str, Any]], fqdn: str) -> Dict[str, Any]:
    latest = rows[0] if rows else {"creationTime": None, "metrics": None}
    return {"hostName": fqdn, "creationTime": latest["creationTime"],
            "metrics": latest["metrics"]}
