"""A harvester's database as the reporter's tests see it: the schema's rows (queues, workers,
service metrics, the adjuster's cache) dated around NOW, the harvester user's awkward password,
its panda_harvester.cfg, and a private MariaDB server that holds them.

The suite starts that server once per run (the session fixture `mariadb` in
tests/conftest.py); tests only read the schemas made here, and a test that needs rows of its
own makes its own schema on the same server.
"""

from __future__ import annotations

import calendar
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Optional

from clusterwatch.loopback.mariadb import (
    MariaDB,
    MariaDBMissing,
    binaries,
    create_harvester_schema,
    mariadb_server,
)
from tests.components import unavailable

SCHEMA = "HARVESTER"
USER = "harvester"
# %, #, ;, both quotes, a backslash and a space: each one breaks a naive option file.
PASSWORD = "p%w# \"q\\x'y;z"
CFG_PASSWORD = PASSWORD.replace("%", "%%")
FQDN = "harvester01.example.org"
NOW = calendar.timegm((2026, 10, 2, 18, 30, 0))
SINCE = NOW - 300


def t(hms: str, day: int = 2) -> str:
    return f"2026-10-{day:02d} {hms}"


def hexed(value: Optional[str]) -> str:
    """A text literal that needs no escaping and keeps UTF-8 whatever the client's charset."""
    return "NULL" if value is None else f"_utf8mb4 X'{value.encode().hex()}'"


def insert(table: str, rows: list[dict[str, Any]]) -> str:
    statements = []
    for row in rows:
        values = [
            "NULL" if v is None else str(v) if isinstance(v, int) else hexed(v)
            for v in row.values()
        ]
        columns = ",".join(row)
        literals = ",".join(values)
        statements.append(f"INSERT INTO {table}({columns}) VALUES ({literals});")  # noqa: S608
    return "\n".join(statements)


def pq(queue: str, site: str, job: str, res: str, limit: Optional[int], most: Optional[int],
       jobs: Optional[int], new: Optional[int], fetch: Optional[str],
       submit: Optional[str]) -> dict[str, Any]:
    return {"uniqueName": f"{queue}_{res}_{job}", "queueName": queue, "siteName": site,
            "jobType": job, "resourceType": res, "nQueueLimitWorker": limit, "maxWorkers": most,
            "nQueueLimitJob": jobs, "nNewWorkers": new, "jobFetchTime": fetch,
            "submitTime": submit, "lockedBy": "submitter-1"}


def worker(wid: int, site: str, status: str, end: Optional[str] = None,
           start: Optional[str] = None, exit_code: Optional[int] = None,
           diag: Optional[str] = None, attributes: Optional[str] = None,
           node: Optional[str] = "node01.example.org") -> dict[str, Any]:
    return {"workerID": wid, "batchID": f"12345{wid}.0", "queueName": f"{site}_Q",
            "computingSite": site, "status": status, "submitTime": t("17:00:00"),
            "startTime": start, "endTime": end, "nativeExitCode": exit_code,
            "nativeStatus": "completed" if status == "finished" else None,
            "diagMessage": diag, "workAttributes": attributes, "nodeID": node,
            "computingElement": "gridgk01.example.org", "mapType": "NoJob",
            "harvesterHost": FQDN}


def log_url(wid: int) -> str:
    return json.dumps({"batchLog": f"https://h.example.org/condor_logs/26-10-02_17/grid.{wid}.0.log",
                       "stdOut": "x", "jdl": "executable = runpilot\n\tqueue 1"})


PQ_ROWS = [
    pq("BNL_PROD", "BNL", "ANY", "ANY", 100, 1000, 50, 0, t("18:29:10"), t("18:29:40")),
    pq("BNL_PROD", "BNL", "managed", "SCORE", None, None, None, 7, t("18:29:10"), t("18:29:40")),
    pq("BNL_ANALY", "BNL_ANALY", "ANY", "ANY", 20, 200, None, 3, None, t("18:00:00")),
]
DIAG = "Condor HoldReason: Job\ttransfer failed\nNULL ü"
WORK_ROWS = [
    worker(1, "BNL", "submitted"), worker(2, "BNL", "running", start=t("18:00:00")),
    worker(3, "BNL", "running", start=t("18:01:00")), worker(4, "BNL", "ready"),
    worker(5, "BNL", "idle"), worker(6, "BNL", "pending"), worker(7, "BNL_ANALY", "submitted"),
    worker(10, "BNL", "finished", t("18:26:00"), t("18:00:00"), 0),   # 1560 s
    worker(11, "BNL", "finished", t("18:27:00"), t("18:10:00"), 0),   # 1020 s
    worker(12, "BNL", "finished", t("18:28:30"), t("18:20:01"), 0),   # 509 s
    worker(13, "BNL", "finished", t("18:29:01"), t("18:29:00"), 2,    # 1 s, exit 2
           "Payload execution error: returned non-zero 2", log_url(13)),
    worker(14, "BNL", "failed", t("18:29:00"), None, None, "Condor HoldReason: held", None),
    worker(15, "BNL", "cancelled", t("18:30:00"), None, None, DIAG, log_url(15), node=None),
    worker(16, "BNL", "missed", t("18:25:00"), None, None, None, "{not json"),
    worker(17, "BNL_ANALY", "finished", t("18:28:00")),
    worker(18, "BNL", "failed", t("18:30:01", day=1), diag="old", attributes="[]"),
    worker(19, "BNL", "failed", t("18:30:00", day=1)),     # exactly 24 h ago: out
    worker(20, "BNL", "finished", t("10:00:00"), t("09:00:00"), 0),
    worker(21, "BNL", "failed", t("18:31:00")),            # after `now`: out
    worker(22, "BNL", "running", start=t("18:27:30")),     # started in the interval
    worker(23, "BNL_ANALY", "running", start=t("18:30:00")),  # at `now`: in
    worker(24, "BNL", "running", start=t("18:25:00")),     # at `since`: the interval before
]
CACHE_ROWS = [  # the adjuster's two keys, one dated after `now`, and one never refreshed
    {"mainKey": "job_statistics.json", "subKey": "", "data": '{"BNL": {"activated": 12}}',
     "lastUpdate": t("18:22:00")},
    {"mainKey": "job_statistics_new.json", "subKey": "", "data": "{}",
     "lastUpdate": t("18:31:00")},
    {"mainKey": "panda_queues.json", "subKey": "x\tq", "data": "\u0000", "lastUpdate": None},
]
METRICS = {"rss_mib": 2211.4, "memory_pc": 3.4, "cpu_pc": 11.2, "volume_data_pc": 41.0,
           "cert_lifetime": {"/data/atlpan/proxy/x509up_u25606_prod": 94}}
SM_ROWS = [
    {"creationTime": t("18:20:00"), "hostName": FQDN, "metrics": json.dumps({"cpu_pc": 1})},
    {"creationTime": t("18:25:00"), "hostName": FQDN, "metrics": json.dumps(METRICS)},
    {"creationTime": t("18:29:00"), "hostName": "other.example.org", "metrics": "{}"},
]


# The second schema: only two of the four tables, for "a missing table in its part only".
PART_SCHEMA = "HARVESTER_PART"


@contextmanager
def seeded_server(base: Path) -> Iterator[MariaDB]:
    """A private MariaDB in `base` holding SCHEMA with the rows above and PART_SCHEMA; a
    machine without MariaDB is `unavailable` (fails under CI=true, skips elsewhere)."""
    try:
        binaries()
    except MariaDBMissing as missing:
        unavailable(missing)
    with mariadb_server(base) as db:
        create_harvester_schema(db, SCHEMA, USER, PASSWORD)
        db.sql("\n".join((insert("pq_table", PQ_ROWS), insert("work_table", WORK_ROWS),
                          insert("sm_table", SM_ROWS), insert("cache_table", CACHE_ROWS))),
               SCHEMA)
        create_harvester_schema(db, PART_SCHEMA, USER, PASSWORD,
                                tables=("pq_table", "work_table"))
        yield db


def write_cfg(tmp_path: Path, port: str = "${CW_TEST_DB_PORT}", password: str = CFG_PASSWORD,
              schema: str = SCHEMA, host: str = "127.0.0.1",
              user: str = "$CW_TEST_DB_USER") -> str:
    path = tmp_path / "panda_harvester.cfg"
    path.write_text(
        "[db]\nverbose = False\nuseInspect = False\nnConnections = 10\nengine = mariadb\n"
        f"useMySQLdb = False\nuser = {user}\npassword = {password}\n"
        f"schema = {schema}\nhost = {host}\nport = \t{port}\nreconnectTimeout = 300\n"
    )
    return str(path)
