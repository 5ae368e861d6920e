"""The admission tests' harvester database: a work_table of workers that ended in the hour
before NOW (refusals, a cancellation, an error, a success), the schema without a work_table,
and a harvester host that reads them with the workers' condor event logs and launcher stderr
on disk. The schemas live on the session's MariaDB (tests/conftest.py: `admission_db`).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any, Optional

import pytest

from clusterwatch.loopback.mariadb import MariaDB, create_harvester_schema, insert_sql
from clusterwatch.reporter import main as reporter_main
from tests.support.admission_section import FILES
from tests.support.harvester_db import NOW, PASSWORD, USER, write_cfg
from tests.support.harvester_host import Host

SCHEMA = "HARVESTER_ADMISSION"
NO_WORK_TABLE = "HARVESTER_NO_WORK"
BASE = "https://harvester01.example.org/condor_logs"
SUBDIR = "26-10-02_17"


def _row(wid: int, status: str, code: Optional[int], log: Optional[str], err: Optional[str],
         end: str = "18:20:00", site: str = "BNL_OSG_1") -> dict[str, Any]:
    attributes = {"batchLog": f"{BASE}/{SUBDIR}/{log}" if log else None,
                  "stdErr": f"{BASE}/{SUBDIR}/{err}" if err else None, "stdOut": "x"}
    return {"workerID": wid, "batchID": f"{wid}.0", "queueName": site, "computingSite": site,
            "status": status, "submitTime": "2026-10-02 17:50:00",
            "startTime": "2026-10-02 18:10:00", "endTime": f"2026-10-02 {end}",
            "nativeExitCode": code, "errorCode": 9000 if code == 73 else None,
            "diagMessage": f"Payload execution error: returned non-zero {code}" if code else None,
            "workAttributes": json.dumps(attributes)}


ROWS = [
    _row(1, "failed", 73, "v23_refusal.log", "stderr_refusal.err"),
    _row(2, "failed", 73, "v23_refusal.log", "stderr_refusal.err"),
    _row(3, "failed", 73, "grid_refusal.log", "stderr_no_lifetime.err"),
    _row(4, "cancelled", None, "v23_sigterm.log", None),
    _row(5, "failed", 64, "v23_error.log", None),
    _row(6, "finished", 0, "v23_ok.log", None),
    _row(7, "failed", 73, "v23_refusal.log", None, end="17:29:59"),  # before the hour
    _row(8, "running", None, None, None, end="18:20:00"),            # not ended
]


def create_schemas(db: MariaDB) -> None:
    """SCHEMA holding ROWS and NO_WORK_TABLE holding only a pq_table."""
    create_harvester_schema(db, SCHEMA, USER, PASSWORD, tables=("work_table",))
    create_harvester_schema(db, NO_WORK_TABLE, USER, PASSWORD, tables=("pq_table",))
    db.sql(insert_sql("work_table", ROWS), SCHEMA)


def host_reading(tmp_path: Path, db: MariaDB, monkeypatch: pytest.MonkeyPatch) -> Host:
    """A host in `tmp_path` whose reporter, run in this process at NOW, reads SCHEMA on `db`
    (its no.cfg) and finds the workers' files through its queue configuration (no.json)."""
    monkeypatch.setattr(reporter_main.time, "time", lambda: float(NOW))  # type: ignore[attr-defined]
    monkeypatch.setenv("CW_TEST_DB_PORT", str(db.port))
    monkeypatch.setenv("CW_TEST_DB_USER", USER)
    built = Host(tmp_path)
    logs = tmp_path / "condor_logs"
    shutil.copytree(FILES, logs / SUBDIR)
    (tmp_path / "no.json").write_text(json.dumps(
        {"BNL_OSG_1": {"submitter": {"logBaseURL": BASE, "logDir": str(logs)}}}))
    cfg = write_cfg(tmp_path, schema=SCHEMA)
    os.replace(cfg, tmp_path / "no.cfg")
    return built
