"""The admission section through whole reporter runs: a real MariaDB work_table, the workers'
condor event logs and launcher stderr on disk, the options, the state's cache over runs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Optional

import pytest

from clusterwatch.loopback.mariadb import MariaDB, create_harvester_schema, insert_sql
from clusterwatch.reporter import main as reporter_main
from clusterwatch.reporter.build import build
from tests.support.admission_section import FILES

from .test_harvester_db import NOW, PASSWORD, USER, mariadb, write_cfg  # noqa: F401
from .test_main import Host, validate

pytestmark = pytest.mark.integration

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


@pytest.fixture(scope="module")
def admission_db(mariadb: MariaDB) -> MariaDB:  # noqa: F811
    create_harvester_schema(mariadb, SCHEMA, USER, PASSWORD, tables=("work_table",))
    create_harvester_schema(mariadb, NO_WORK_TABLE, USER, PASSWORD, tables=("pq_table",))
    mariadb.sql(insert_sql("work_table", ROWS), SCHEMA)
    return mariadb


@pytest.fixture
def host(tmp_path: Path, admission_db: MariaDB, monkeypatch: pytest.MonkeyPatch) -> Host:
    monkeypatch.setattr(reporter_main.time, "time", lambda: float(NOW))  # type: ignore[attr-defined]
    monkeypatch.setenv("CW_TEST_DB_PORT", str(admission_db.port))
    monkeypatch.setenv("CW_TEST_DB_USER", USER)
    built = Host(tmp_path)
    logs = tmp_path / "condor_logs"
    shutil.copytree(FILES, logs / SUBDIR)
    (tmp_path / "no.json").write_text(json.dumps(
        {"BNL_OSG_1": {"submitter": {"logBaseURL": BASE, "logDir": str(logs)}}}))
    cfg = write_cfg(tmp_path, schema=SCHEMA)
    os.replace(cfg, tmp_path / "no.cfg")
    return built


def _print(host: Host, capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, Any]:
    assert reporter_main.main(host.args("--print", *extra)) == 0
    record: dict[str, Any] = json.loads(capsys.readouterr().out)
    validate(record)
    return record


def test_it_reports_the_hours_ends_from_the_database_and_the_files(
        host: Host, capsys: pytest.CaptureFixture[str]) -> None:
    section = _print(host, capsys)["admission"]

    queue = section["queues"]["BNL_OSG_1"]
    assert section["workers"] == 6
    assert [queue[name]["count"] for name in ("refusal", "cancelled", "error", "finished")] == [
        3, 1, 1, 1]
    assert [(g["slot_name"], g["required_lifetime_s"], g["count"])
            for g in queue["refusal"]["groups"]] == [("slot1_3@wn01.example.edu", 7200, 2),
                                                     (None, None, 1)]
    assert queue["refusal"]["times"]["recorded_wall_s"] == 3 * 600
    assert queue["refusal"]["times"]["slot_busy_s"] == 240
    assert (queue["coverage"]["with_evidence"], queue["coverage"]["without_evidence"]) == (6, 0)
    assert "Software directory" not in json.dumps(section)


def test_it_takes_the_sites_refusal_codes_and_patterns(
        host: Host, capsys: pytest.CaptureFixture[str]) -> None:
    section = _print(host, capsys, "--refusal-exit-codes", "64, 65",
                     "--lifetime-pattern", r"lifetime: remaining=(?P<remaining>\d+)s")["admission"]

    queue = section["queues"]["BNL_OSG_1"]
    assert section["refusal_exit_codes"] == [64, 65]
    assert (queue["refusal"]["count"], queue["error"]["count"]) == (1, 3)
    assert queue["coverage"]["not_available"]["required_lifetime_s"] == {
        "no line of the launcher's stderr matched": 3,
        "no local path for the worker's stdErr URL": 3}


def test_it_reads_the_files_once_and_keeps_them_in_the_state_over_runs(
        host: Host, capsys: pytest.CaptureFixture[str]) -> None:
    host.without_monitor()
    assert reporter_main.main(host.args()) == 2
    assert reporter_main.main(host.args()) == 2
    state = json.loads((host.state / "state.json").read_text())

    second = _print(host, capsys)["admission"]

    assert sorted(state["admission"]) == ["1", "2", "3", "4", "5", "6"]
    assert second["read"] == {"records_read": 0, "from_cache": 6, "deferred": 0, "cap": 4000}
    assert second["queues"]["BNL_OSG_1"]["refusal"]["count"] == 3


def test_it_makes_a_database_it_cannot_read_the_sections_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    record = _print(Host(tmp_path), capsys)

    assert set(record["admission"]) == {"error"}
    assert "no.cfg" in record["admission"]["error"]


@pytest.mark.parametrize("bad", [["--refusal-exit-codes", "7x"], ["--refusal-exit-codes", ""],
                                 ["--refusal-exit-codes", "-1"], ["--refusal-exit-codes", "256"],
                                 ["--refusal-exit-codes", "73,99999999999999999999"],
                                 ["--refusal-exit-codes", "\u0667\u0663"],  # Arabic-Indic 73
                                 ["--startup-pattern", "(?P<node>x)"],
                                 ["--lifetime-pattern", "("]])
def test_it_exits_64_with_one_line_on_a_bad_admission_option(
        tmp_path: Path, bad: list[str]) -> None:
    app = build(str(tmp_path / "harvester-reporter.pyz"))
    done = subprocess.run([sys.executable, app, *Host(tmp_path).args("--print", *bad)],
                          capture_output=True, text=True, check=False)

    assert done.returncode == 64
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.stdout == ""


def test_it_makes_a_failing_query_the_sections_error_and_keeps_the_cache(
        host: Host, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    host.without_monitor()
    assert reporter_main.main(host.args()) == 2  # fills the cache
    os.replace(write_cfg(tmp_path, schema=NO_WORK_TABLE), tmp_path / "no.cfg")

    assert reporter_main.main(host.args()) == 2
    section = _print(host, capsys)["admission"]

    assert set(section) == {"error"} and "ERROR 1146" in section["error"]
    assert PASSWORD not in section["error"]
    state = json.loads((host.state / "state.json").read_text())
    assert sorted(state["admission"]) == ["1", "2", "3", "4", "5", "6"]
