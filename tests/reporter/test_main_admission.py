"""The admission section through whole reporter runs: a real MariaDB work_table, the workers'
condor event logs and launcher stderr on disk, the options, the state's cache over runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from clusterwatch.reporter import main as reporter_main
from tests.support.admission_db import NO_WORK_TABLE
from tests.support.harvester_db import PASSWORD, write_cfg
from tests.support.harvester_host import Host

from .main_support import validate

pytestmark = pytest.mark.integration


def _print(host: Host, capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, Any]:
    assert reporter_main.main(host.args("--print", *extra)) == 0
    record: dict[str, Any] = json.loads(capsys.readouterr().out)
    validate(record)
    return record


def test_it_reports_the_hours_ends_from_the_database_and_the_files(
        admission_host: Host, capsys: pytest.CaptureFixture[str]) -> None:
    section = _print(admission_host, capsys)["admission"]

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
        admission_host: Host, capsys: pytest.CaptureFixture[str]) -> None:
    section = _print(admission_host, capsys, "--refusal-exit-codes", "64, 65",
                     "--lifetime-pattern", r"lifetime: remaining=(?P<remaining>\d+)s")["admission"]

    queue = section["queues"]["BNL_OSG_1"]
    assert section["refusal_exit_codes"] == [64, 65]
    assert (queue["refusal"]["count"], queue["error"]["count"]) == (1, 3)
    assert queue["coverage"]["not_available"]["required_lifetime_s"] == {
        "no line of the launcher's stderr matched": 3,
        "no local path for the worker's stdErr URL": 3}


def test_it_reads_the_files_once_and_keeps_them_in_the_state_over_runs(
        admission_host: Host, capsys: pytest.CaptureFixture[str]) -> None:
    admission_host.without_monitor()
    assert reporter_main.main(admission_host.args()) == 2
    assert reporter_main.main(admission_host.args()) == 2
    state = json.loads((admission_host.state / "state.json").read_text())

    second = _print(admission_host, capsys)["admission"]

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
        tmp_path: Path, bad: list[str], zipapp: Path) -> None:
    done = subprocess.run([sys.executable, str(zipapp), *Host(tmp_path).args("--print", *bad)],
                          capture_output=True, text=True, check=False)

    assert done.returncode == 64
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.stdout == ""


def test_it_makes_a_failing_query_the_sections_error_and_keeps_the_cache(
        admission_host: Host, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    admission_host.without_monitor()
    assert reporter_main.main(admission_host.args()) == 2  # fills the cache
    os.replace(write_cfg(tmp_path, schema=NO_WORK_TABLE), tmp_path / "no.cfg")

    assert reporter_main.main(admission_host.args()) == 2
    section = _print(admission_host, capsys)["admission"]

    assert set(section) == {"error"} and "ERROR 1146" in section["error"]
    assert PASSWORD not in section["error"]
    state = json.loads((admission_host.state / "state.json").read_text())
    assert sorted(state["admission"]) == ["1", "2", "3", "4", "5", "6"]
