"""A harvester's database content (pq_table, work_table, sm_table, cache_table) around a
given time.

The reporter's tests pin their rows to 2026-10-02; the demo needs rows relative to "now",
so that launch limits, live workers, workers ended in the interval and workers that did not
finish in the last 24 hours all show up in a record collected now. Workers that did not
finish point their `batchLog` at a condor event log of clusterwatch.loopback.harvester_files,
which `place_condor_logs` copies to where the queue configuration maps that URL.
"""

from __future__ import annotations

import json
import math
import shutil
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Optional

from clusterwatch.loopback.harvester_files import harvester_file
from clusterwatch.loopback.mariadb import MariaDB, create_harvester_schema, insert_sql

# (condor fixture log, harvester status, nativeExitCode, diagMessage): workers that did not
# finish, each with the batch system's own reason in its event log.
NOT_FINISHED = (
    ("iso_held_then_aborted.log", "cancelled", None, "Condor HoldReason: memory limit"),
    ("iso_aborted.log", "failed", None, "Condor HoldReason: removed by periodic remove"),
    ("iso_held.log", "failed", None, "Condor HoldReason: transfer input files failure"),
    ("iso_terminated_nonzero.log", "finished", 64, "Payload execution error: returned 64"),
    ("iso_remote_error.log", "failed", None, None),
)
LIVE = (("running", 41), ("submitted", 6), ("idle", 3))


def utc(seconds: float) -> str:
    """The harvester's naive UTC text, as it writes its timestamp columns."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(seconds))


def launch_limits(queue: str, now: float, limit: int, most: int, new: int) -> dict[str, Any]:
    return {"uniqueName": f"{queue}_ANY_ANY", "queueName": queue, "siteName": queue,
            "jobType": "ANY", "resourceType": "ANY", "nQueueLimitWorker": limit,
            "maxWorkers": most, "nQueueLimitJob": None, "nNewWorkers": new,
            "jobFetchTime": utc(now - 60), "submitTime": utc(now - 50),
            "lockedBy": "submitter-1"}


def worker(worker_id: int, queue: str, status: str, fqdn: str, *, submit: float,
           start: Optional[float] = None, end: Optional[float] = None,
           exit_code: Optional[int] = None, diag: Optional[str] = None,
           log_url: Optional[str] = None) -> dict[str, Any]:
    attributes = json.dumps({"batchLog": log_url}) if log_url else None
    return {"workerID": worker_id, "batchID": f"{worker_id}.0", "queueName": queue,
            "computingSite": queue, "status": status, "submitTime": utc(submit),
            "startTime": utc(start) if start else None, "endTime": utc(end) if end else None,
            "nativeExitCode": exit_code,
            "nativeStatus": "completed" if status == "finished" else None,
            "diagMessage": diag, "workAttributes": attributes,
            "nodeID": f"node{worker_id % 90 + 10:03d}.example.org",
            "computingElement": "gridgk01.example.org", "mapType": "NoJob",
            "harvesterHost": fqdn}


def condor_log_url(fqdn: str, worker_id: int) -> str:
    return f"https://{fqdn}/condor_logs/demo/grid.{worker_id}.0.log"


# A pull-queue template the queues name: the harvester's mandatory plugin sections and a
# worker ratio, so each record has an effective configuration and a limit in force.
TEMPLATE = "DEMO_PULL_TEMPLATE"
TEMPLATE_ENTRY = {
    "isTemplateQueue": True, "mapType": "NoJob", "maxWorkers": 1000, "nQueueLimitWorker": 200,
    "nQueueLimitWorkerRatio": 20, "nQueueLimitWorkerMin": 5, "nQueueLimitWorkerMax": 500,
    **{section: {"module": f"pandaharvester.harvester{section.lower()}.dummy", "name": "Dummy"}
       for section in ("messenger", "monitor", "preparator", "stager", "submitter", "sweeper",
                       "workerMaker")}}


def queue_config(queues: Sequence[str], fqdn: str, condor_dir: Path) -> dict[str, Any]:
    """panda_queueconfig.json: a template and queues naming it, mapping the workers'
    batchLog URLs to `condor_dir`."""
    config: dict[str, Any] = {TEMPLATE: TEMPLATE_ENTRY}
    for queue in queues:
        config[queue] = {"templateQueueName": TEMPLATE,
                         "submitter": {"logBaseURL": f"https://{fqdn}/condor_logs",
                                       "logDir": str(condor_dir)}}
    return config


def job_demand_cache(now: float) -> list[dict[str, Any]]:
    """cache_table rows as the cacher leaves them (refreshed every 10 minutes)."""
    return [{"mainKey": key, "subKey": "", "data": "{}", "lastUpdate": utc(now - age)}
            for key, age in (("job_statistics.json", 240), ("job_statistics_new.json", 300),
                             ("panda_queues.json", 900))]


def started(queue: str, fqdn: str, start: float, end: float, first_id: int,
            count: int) -> list[dict[str, Any]]:
    """Workers that started within (start, end] and run on (whole seconds, as `ended`)."""
    first_second, last_second = math.ceil(start) + 1, math.floor(end)
    return [worker(first_id + n, queue, "running", fqdn, submit=start - 300,
                   start=min(last_second, first_second + n)) for n in range(count)]


def history(queues: Sequence[str], fqdn: str, now: float,
            first_id: int) -> dict[str, list[dict[str, Any]]]:
    """Rows before the demo's first reporter run: limits, live workers, recent failures."""
    pq = [launch_limits(queue, now, 100 + 50 * n, 1000, 3 + n) for n, queue in
          enumerate(queues)]
    work: list[dict[str, Any]] = []
    next_id = first_id
    for queue in queues:
        for status, count in LIVE:
            for _ in range(count):
                start = now - 1800 if status == "running" else None
                work.append(worker(next_id, queue, status, fqdn, submit=now - 3600,
                                   start=start))
                next_id += 1
    for n, (_, status, exit_code, diag) in enumerate(NOT_FINISHED):
        end = now - 3600 * (n + 1)
        work.append(worker(next_id, queues[0], status, fqdn, submit=end - 7200,
                           start=end - 3600, end=end, exit_code=exit_code, diag=diag,
                           log_url=condor_log_url(fqdn, next_id)))
        next_id += 1
    metrics = {"rss_mib": 2211.4, "memory_pc": 3.4, "cpu_pc": 11.2, "volume_data_pc": 41.0}
    sm = [{"creationTime": utc(now - 120), "hostName": fqdn, "metrics": json.dumps(metrics)}]
    return {"pq_table": pq, "work_table": work, "sm_table": sm,
            "cache_table": job_demand_cache(now)}


def ended(queue: str, fqdn: str, start: float, end: float, first_id: int,
          runs_s: Sequence[int]) -> list[dict[str, Any]]:
    """Workers that finished within (start, end] after running `runs_s` seconds (one each).

    The reporter compares whole seconds (`endTime > since`), so the end times are whole
    seconds after `start`'s, never past `end`.
    """
    first_second, last_second = math.ceil(start) + 1, math.floor(end)
    rows = []
    for n, run in enumerate(runs_s):
        at = min(last_second, first_second + n)
        rows.append(worker(first_id + n, queue, "finished", fqdn, submit=at - run - 600,
                           start=at - run, end=at, exit_code=0))
    return rows


def place_condor_logs(work_rows: Sequence[Mapping[str, Any]], condor_dir: Path) -> int:
    """Copies a fixture event log to the local path of each not-finished worker's batchLog."""
    diag_to_log = {diag: name for name, _, _, diag in NOT_FINISHED}
    placed = 0
    for row in work_rows:
        attributes = row.get("workAttributes")
        if not attributes:
            continue
        name = diag_to_log.get(row.get("diagMessage"), NOT_FINISHED[-1][0])
        target = condor_dir / "demo" / f"grid.{row['workerID']}.0.log"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(harvester_file("condor", name), target)
        placed += 1
    return placed


def load(db: MariaDB, schema: str, user: str, password: str,
         rows: Mapping[str, Sequence[Mapping[str, Any]]]) -> None:
    """Creates the harvester's schema and user, and inserts `rows` (table -> rows)."""
    create_harvester_schema(db, schema, user, password)
    insert(db, schema, rows)


def insert(db: MariaDB, schema: str, rows: Mapping[str, Sequence[Mapping[str, Any]]]) -> None:
    script = "\n".join(insert_sql(table, table_rows) for table, table_rows in rows.items()
                       if table_rows)
    if script:
        db.sql(script, schema)
