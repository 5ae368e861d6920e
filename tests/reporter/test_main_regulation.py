"""Whole reporter runs for telemetry 1.3/1.5: the limit in force, worker starts, the job-demand
cache and queue_status from a real MariaDB and a template-merged queue configuration;
`--interval-s`; `--print --queue-config` alone, through the built zipapp and the system python3.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from clusterwatch.reporter import main as reporter_main
from clusterwatch.reporter.queue_status import host_section, read_effective
from tests.support.harvester_db import NOW, USER, write_cfg
from tests.support.harvester_host import Host
from tests.support.reporter_zipapp import SYSTEM_PYTHON

from .main_support import validate

PLUGINS = {section: {"module": "m", "name": section} for section in (
    "messenger", "monitor", "preparator", "stager", "submitter", "sweeper", "workerMaker")}
QUEUE_CONFIG: dict[str, Any] = {
    "PULL_TEMPLATE": dict(PLUGINS, mapType="NoJob", maxWorkers=1000, nQueueLimitWorker=100,
                          nQueueLimitWorkerRatio=50, nQueueLimitWorkerMin=1,
                          nQueueLimitWorkerMax=500),
    # BNL_PROD runs 4 workers: 50% of 4 = 2, above the minimum 1: min(100, 2) = 2
    "BNL_PROD": {"templateQueueName": "PULL_TEMPLATE", "queueStatus": "ONLINE"},
    # a push queue: the ratio and minimum are not applied, the maximum clips the limit
    "PUSH_Q": dict(PLUGINS, queueStatus="offline", maxWorkers=30, nQueueLimitWorker=80,
                   nQueueLimitWorkerRatio=10, nQueueLimitWorkerMax=40),
}
# The fixture's submitter sections name no template: each queue's pilot dispatch says so (1.6).
NO_TEMPLATE = {"pilot_dispatch": {
    "kind": "unknown", "images": [], "template": None, "sha256": None, "bootstrap_images": [],
    "reason": "no submitter.templateFile (a template chosen per CE from CEtemplateDir is not "
              "read)"}}
def write_queue_config(root: Path, document: Any = QUEUE_CONFIG) -> Path:
    path = root / "panda_queueconfig.json"
    path.write_text(json.dumps(document))
    return path


def with_the_database(tmp_path: Path, port: int, config: Path,
                      monkeypatch: pytest.MonkeyPatch,
                      capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """The record printed at NOW, after a run 300 s earlier (so the interval is the
    fixture's), of a host reading the test database and the queue configuration `config`."""
    monkeypatch.setenv("CW_TEST_DB_PORT", str(port))
    monkeypatch.setenv("CW_TEST_DB_USER", USER)
    host = Host(tmp_path)
    args = [a if a != str(tmp_path / "no.cfg") else write_cfg(tmp_path) for a in host.args(
        "--print", "--queue-config", str(config))]
    return after_a_run_at_since(host, args, monkeypatch, capsys)


def after_a_run_at_since(host: Host, args: list[str], monkeypatch: pytest.MonkeyPatch,
                         capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """The record printed at NOW after a run 300 s earlier, so the interval is the fixture's."""
    host.without_monitor()
    monkeypatch.setattr(reporter_main.time, "time", lambda: float(NOW - 300))
    assert reporter_main.main([a for a in args if a != "--print"]) == 2
    capsys.readouterr()
    monkeypatch.setattr(reporter_main.time, "time", lambda: float(NOW))
    return printed(args, capsys)


def printed(args: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert reporter_main.main(args) == 0
    record: dict[str, Any] = json.loads(capsys.readouterr().out)
    validate(record)
    return record


def test_it_reports_the_limit_in_force_starts_and_cache_beside_the_database_limits(
    tmp_path: Path, mariadb, monkeypatch, capsys  # type: ignore[no-untyped-def]
) -> None:
    config = write_queue_config(tmp_path)
    record = with_the_database(tmp_path, mariadb.port, config, monkeypatch, capsys)
    limits = record["harvester_db"]["launch_limits"]
    prod = limits["BNL_PROD"]
    assert prod["nQueueLimitWorker"] == 100  # pq_table's, as before
    assert (prod["nQueueLimitWorkerRatio"], prod["nQueueLimitWorkerMin"],
            prod["nQueueLimitWorkerMax"]) == (50, 1, 100)  # the maximum clipped as harvester
    assert prod["limit_in_force"] == {
        "value": 2, "at_most": 100, "running_workers": 4,
        "derivation": "nQueueLimitWorker 100 -> 100; nQueueLimitWorkerRatio 50% of 4 running "
                      "= 2 -> min(100, 2) = 2"}
    analy = limits["BNL_ANALY"]  # in pq_table, not in the configuration
    assert (analy["nQueueLimitWorkerRatio"], analy["nQueueLimitWorkerMin"],
            analy["nQueueLimitWorkerMax"]) == (None, None, None)
    assert "holds no queue BNL_ANALY" in analy["limit_in_force"]["error"]
    assert record["harvester_db"]["worker_starts"]["BNL"]["started"] == 2
    assert record["harvester_db"]["job_demand_cache"]["job_statistics.json"]["age_s"] == 480
    assert record["queue_status"] == {
        "source": str(config),
        "queues": {"BNL_PROD": {"status": "online", "active": True, **NO_TEMPLATE},
                   "PUSH_Q": {"status": "offline", "active": False, **NO_TEMPLATE}},
        "dropped": [], "unconfigured": ["BNL_ANALY"]}


def test_it_says_why_there_is_no_limit_in_force_when_the_config_is_unreadable(
    tmp_path: Path, mariadb, monkeypatch, capsys  # type: ignore[no-untyped-def]
) -> None:
    config = tmp_path / "cut.json"
    config.write_bytes(b'{"BNL_PROD": {"mapType": "NoJ\x00')
    record = with_the_database(tmp_path, mariadb.port, config, monkeypatch, capsys)
    error = record["harvester_db"]["launch_limits"]["BNL_PROD"]["limit_in_force"]["error"]
    assert error.startswith(f"queue configuration {config} is not JSON: ")
    assert record["queue_status"]["error"] == "queue configuration: " + error
    assert record["harvester_db"]["worker_starts"]["BNL"]["started"] == 2  # unaffected


def test_it_states_its_interval_in_the_record(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    host = Host(tmp_path)
    assert printed(host.args("--print"), capsys)["interval"]["expected_s"] == 300
    assert printed(host.args("--print", "--interval-s", "60"), capsys)["interval"][
        "expected_s"] == 60


@pytest.mark.parametrize("value", ["0", "-60", "86401", "60s", "1e3", ""])
def test_it_refuses_a_bad_interval_with_exit_64(tmp_path: Path, value: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    host = Host(tmp_path)
    with pytest.raises(SystemExit) as exited:
        code = reporter_main.main(host.args("--print", "--interval-s", value))
        raise SystemExit(code)
    assert exited.value.code == 64
    captured = capsys.readouterr()
    assert captured.out == "" and "--interval-s" in captured.err


def test_it_reads_a_cache_table_without_the_adjusters_keys() -> None:
    from clusterwatch.reporter.harvester_regulation import job_demand_cache

    assert job_demand_cache([{"mainKey": "panda_queues.json", "subKey": "", "lastUpdate":
                              "2026-10-02T18:00:00Z", "age_s": 1800}]) == {
        "job_statistics.json": {"subKey": None, "lastUpdate": None, "age_s": None},
        "job_statistics_new.json": {"subKey": None, "lastUpdate": None, "age_s": None},
        "panda_queues.json": {"subKey": "", "lastUpdate": "2026-10-02T18:00:00Z",
                              "age_s": 1800}}


def test_it_checks_the_queue_sections_alone_through_the_built_zipapp(tmp_path: Path,
                                                                     zipapp: Path) -> None:
    """No database, no logs, no state: those sections are error fields, exit 0."""
    config = write_queue_config(tmp_path)
    done = subprocess.run(
        [SYSTEM_PYTHON, str(zipapp), "--print", "--queue-config", str(config),
         "--harvester-cfg", str(tmp_path / "absent.cfg"), "--log-dir", str(tmp_path / "none"),
         "--state", str(tmp_path / "state"), "--interval-s", "60"],
        capture_output=True, text=True, check=False, env={"PATH": "/usr/bin:/bin"},
        cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    validate(record)
    section = host_section(*read_effective(str(config)), str(config), {})
    for entry in section["queues"].values():
        entry.update(NO_TEMPLATE)
    assert record["queue_status"] == section
    assert record["queue_status"]["queues"]["PUSH_Q"] == {"status": "offline", "active": False,
                                                          **NO_TEMPLATE}
    assert record["interval"]["expected_s"] == 60
    for part in ("launch_limits", "worker_starts", "job_demand_cache"):
        assert record["harvester_db"][part]["error"].startswith(
            f"cannot read {tmp_path / 'absent.cfg'}")
    assert "error" in record["fetching"]["read"]
    assert not (tmp_path / "state").exists()
    for bad in ("0", "86401", "5m"):
        refused = subprocess.run([SYSTEM_PYTHON, str(zipapp), "--print", "--interval-s", bad],
                                 capture_output=True, text=True, check=False)
        assert refused.returncode == 64 and refused.stdout == ""
        assert "--interval-s" in refused.stderr and "Traceback" not in refused.stderr
