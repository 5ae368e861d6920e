"""Whole reporter runs: options, first run, counting, buffering, delivery, the zipapp.

Every record produced here is validated against the shipped JSON Schema.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from clusterwatch.loopback.harvester_files import HARVESTER_LOGS
from clusterwatch.reporter import main as reporter_main
from clusterwatch.reporter.build import build
from tests.support.harvester_db import DIAG, NOW, USER, write_cfg
from tests.support.harvester_host import Host
from tests.support.tls import MonitorServer

from .main_support import FETCH_OK, validate

FETCH_NONE = ("{t},120 panda.log.job_fetcher: INFO     run <queueName=UM_GREX_PanDA_1> got 0 "
              "jobs for prodSourceLabel=managed rtype=None with no jobs in PanDA  : took 0.231 "
              "sec\n")
NOISE = ("{t},002 panda.log.job_fetcher: DEBUG    run <queueName=BNL_PanDA_1> no job to fetch; "
         "skip\n")


def print_record(host: Host, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert reporter_main.main(host.args("--print")) == 0
    record: dict[str, Any] = json.loads(capsys.readouterr().out)
    validate(record)
    return record


def test_it_prints_a_valid_record_and_stores_nothing(tmp_path: Path, capsys) -> None:
    host = Host(tmp_path)
    host.append(FETCH_OK.format(t="2026-10-02 18:20:44"))
    record = print_record(host, capsys)
    assert record["host"] == "testhost" and record["schema_version"] == 1
    assert record["interval"]["first_run"] is True
    assert record["fetching"]["read"]["first_run"] is True
    assert record["harvester_db"]["launch_limits"]["error"]  # no config: an error field
    assert not host.state.exists()  # --print stores nothing


def test_it_counts_only_lines_appended_after_the_first_run(tmp_path: Path, pki, capsys) -> None:
    host = Host(tmp_path)
    host.append(FETCH_OK.format(t="2026-10-02 18:00:00"))  # before the first run: not counted
    with MonitorServer(pki["server"]) as monitor:
        monitor.start()
        host.configure(monitor.url, pki["ca"])
        assert reporter_main.main(host.args()) == 0
        host.append(FETCH_OK.format(t="2026-10-02 18:20:44") + NOISE.format(
            t="2026-10-02 18:20:45") + FETCH_NONE.format(t="2026-10-02 18:21:44"))
        host.append("2026-10-02 18:22:00,000 panda.log.job_fetcher: INFO     run <queueName=B")
        assert reporter_main.main(host.args()) == 0
    records = [json.loads(post.body) for post in monitor.posts]
    for record in records:
        validate(record)
    first, second = records
    assert first["interval"]["first_run"] is True and first["fetching"]["queues"] == {}
    assert second["interval"]["first_run"] is False
    queues = second["fetching"]["queues"]
    assert queues["BNL_PanDA_1"]["attempts"] == 1 and queues["BNL_PanDA_1"]["jobs_got"] == 35
    assert queues["UM_GREX_PanDA_1"]["last"]["outcome"].lower() == "no jobs in panda"
    assert queues["UM_GREX_PanDA_1"]["failed"] == 0
    assert all(post.headers["Authorization"] == "Bearer tok-123" for post in monitor.posts)


def test_it_buffers_while_the_monitor_is_down_and_sends_in_order_later(
    tmp_path: Path, pki, capsys
) -> None:
    host = Host(tmp_path)
    with MonitorServer(pki["server"]) as monitor:  # bound, not listening: connection refused
        host.configure(monitor.url, pki["ca"])
        for _ in range(3):
            assert reporter_main.main(host.args()) == 1
        monitor.start()
        assert reporter_main.main(host.args()) == 0
    stamps = [json.loads(post.body)["collected_at"] for post in monitor.posts]
    assert len(stamps) == 4 and stamps == sorted(stamps)
    last = json.loads(monitor.posts[-1].body)
    assert last["delivery"]["backlog"] == 3


def test_it_exits_2_and_buffers_without_a_monitor_url(tmp_path: Path, capsys) -> None:
    host = Host(tmp_path)
    host.env.write_text("SWF_REPORT_TOKEN=abc\n")
    host.env.chmod(0o600)
    assert reporter_main.main(host.args()) == 2
    assert "no monitor URL or token" in capsys.readouterr().err
    assert len(list((host.state / "buffer").glob("*.json"))) == 1


def test_it_refuses_a_readable_env_file_with_exit_2(tmp_path: Path, capsys) -> None:
    host = Host(tmp_path)
    host.configure("https://127.0.0.1:1/api", token="sekrit-token-99")
    host.env.chmod(0o644)
    assert reporter_main.main(host.args()) == 2
    err = capsys.readouterr().err
    assert "chmod 600" in err and "sekrit-token-99" not in err


@pytest.mark.parametrize("bad", [["--no-such-option"], ["--volumes", ","],
                                 ["--report-as", "../x"]])
def test_it_exits_64_on_usage_errors(tmp_path: Path, bad: list[str], capsys) -> None:
    with pytest.raises(SystemExit) as exited:
        code = reporter_main.main(Host(tmp_path).args(*bad))
        raise SystemExit(code)
    assert exited.value.code == 64


def test_it_runs_as_a_zipapp_with_the_same_options(tmp_path: Path) -> None:
    host = Host(tmp_path)
    app = build(str(tmp_path / "harvester-reporter.pyz"))
    assert os.access(app, os.X_OK)
    done = subprocess.run([sys.executable, app, *host.args("--print")], capture_output=True,
                          text=True, check=False, env={"PATH": os.environ["PATH"]})
    assert done.returncode == 0, done.stderr
    validate(json.loads(done.stdout))
    helped = subprocess.run([sys.executable, app, "--help"], capture_output=True, text=True,
                            check=False)
    assert "--report-as" in helped.stdout and "64 usage error" in helped.stdout


def test_it_builds_through_the_clusterwatch_cli(tmp_path: Path, capsys) -> None:
    from clusterwatch.cli import main

    target = tmp_path / "r.pyz"
    assert main(["reporter", "build", "--output", str(target)]) == 0
    import zipfile

    names = set(zipfile.ZipFile(target).namelist())
    assert "clusterwatch/reporter/main.py" in names
    assert "clusterwatch/reporter/record-v1.schema.json" in names
    assert not any(n.startswith(("clusterwatch/watch", "clusterwatch/notify")) for n in names)


def test_it_serves_as_python_dash_m(tmp_path: Path) -> None:
    host = Host(tmp_path)
    done = subprocess.run([sys.executable, "-m", "clusterwatch.reporter", *host.args("--print")],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    validate(json.loads(done.stdout))


def test_it_reports_the_harvester_database_in_a_valid_record(
    tmp_path: Path, mariadb, monkeypatch, capsys  # type: ignore[no-untyped-def]
) -> None:
    monkeypatch.setattr(reporter_main.time, "time", lambda: float(NOW))  # the fixture's day
    host = Host(tmp_path)
    cfg = write_cfg(tmp_path)
    monkeypatch.setenv("CW_TEST_DB_PORT", str(mariadb.port))
    monkeypatch.setenv("CW_TEST_DB_USER", USER)
    args = [a if a != str(tmp_path / "no.cfg") else cfg for a in host.args("--print")]
    assert reporter_main.main(args) == 0
    record = json.loads(capsys.readouterr().out)
    validate(record)
    db = record["harvester_db"]
    assert db["launch_limits"]["BNL_PROD"]["maxWorkers"] == 1000
    assert db["workers_now"]["BNL"]["running"] == 4
    # Workers 13-16 and 18 (24 h back, exclusive); 17 finished with no exit code, 19 ended
    # exactly 24 h ago, 21 after now. No queue configuration: each reason is the diagnostic.
    not_finished = db["workers_not_finished"]
    assert set(not_finished) == {"BNL"} and not_finished["BNL"]["workers"] == 5
    grouped = {reason: (group["count"], group["source"], [ex["worker"] for ex in group["examples"]])
               for reason, group in not_finished["BNL"]["reasons"].items()}
    assert grouped == {
        "Payload execution error: returned non-zero 2": (1, "harvester_diag", [13]),
        "Condor HoldReason: held": (1, "harvester_diag", [14]),
        DIAG: (1, "harvester_diag", [15]),
        "no reason found": (1, "none", [16]),
        "old": (1, "harvester_diag", [18]),
    }
    assert db["workers_not_finished_read"] == {
        "window_s": 86400, "workers": 5, "limit": 2000, "limit_reached": False}
    assert "queue_config_error" in db  # no panda_queueconfig.json here: said, not fatal


@pytest.mark.parametrize("generation", ["new", "old"])
def test_it_fills_every_log_section_validly_from_the_fixture_logs(
    tmp_path: Path, generation: str, capsys
) -> None:
    host = Host(tmp_path)
    host.without_monitor()
    assert reporter_main.main(host.args()) == 2  # first run: positions at the (empty) ends
    capsys.readouterr()
    fixtures = HARVESTER_LOGS / generation
    for source in fixtures.glob("panda-*.log"):
        with (host.log_dir / source.name).open("ab") as handle:
            handle.write(source.read_bytes())
    record = print_record(host, capsys)
    assert record["interval"]["first_run"] is False
    assert record["fetching"]["queues"] and record["submission"]["queues"]
    assert record["failed_calls"]["communicator"]["failed"] > 0
    assert all(not section["read"].get("error") for section in
               (record["fetching"], record["submission"], record["adjustment"]))


def test_it_reports_a_state_dir_it_cannot_use_without_a_traceback(tmp_path: Path,
                                                                   capsys) -> None:
    host = Host(tmp_path)
    host.state.write_text("a file where the state directory should be")
    assert reporter_main.main(host.args()) == 1
    err = capsys.readouterr().err
    assert err.startswith("harvester-reporter: ") and "Traceback" not in err


@pytest.mark.parametrize("damage", [{"logs": "garbage"}, {"last_run": "yesterday"},
                                    {"adjustment": [1, 2]}, {"logs": {"x": 5}},
                                    {"reasons": None}])
def test_it_survives_a_damaged_state_file(tmp_path: Path, damage: dict[str, Any],
                                          capsys) -> None:
    host = Host(tmp_path)
    host.without_monitor()
    assert reporter_main.main(host.args()) == 2
    state_file = host.state / "state.json"
    state = json.loads(state_file.read_text())
    state.update(damage)
    state_file.write_text(json.dumps(state))
    assert reporter_main.main(host.args()) == 2  # a record, buffered; no traceback
    assert "Traceback" not in capsys.readouterr().err
    assert len(list((host.state / "buffer").glob("*.json"))) == 2
    validate(print_record(host, capsys))


def test_it_reads_lines_again_when_a_parser_fails(tmp_path: Path, monkeypatch, capsys) -> None:
    from clusterwatch.reporter import harvester_log

    host = Host(tmp_path)
    host.without_monitor()
    reporter_main.main(host.args())
    host.append(FETCH_OK.format(t="2026-10-02 18:20:44"))
    real = harvester_log.fetching_section

    def broken(chunks):  # type: ignore[no-untyped-def]
        raise RuntimeError("parser bug")

    monkeypatch.setattr(harvester_log, "fetching_section", broken)
    reporter_main.main(host.args())
    monkeypatch.setattr(harvester_log, "fetching_section", real)
    capsys.readouterr()
    record = print_record(host, capsys)
    assert record["fetching"]["queues"]["BNL_PanDA_1"]["attempts"] == 1


def test_it_takes_the_record_back_when_it_cannot_save_its_positions(
    tmp_path: Path, monkeypatch, capsys  # type: ignore[no-untyped-def]
) -> None:
    from clusterwatch.reporter import state as state_module

    host = Host(tmp_path)
    host.without_monitor()
    reporter_main.main(host.args())
    host.append(FETCH_OK.format(t="2026-10-02 18:20:44"))
    real_save = state_module.save

    def disk_full(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(state_module, "save", disk_full)
    assert reporter_main.main(host.args()) == 1
    assert "No space left on device" in capsys.readouterr().err
    assert len(list((host.state / "buffer").glob("*.json"))) == 1  # only the first run's
    monkeypatch.setattr(state_module, "save", real_save)
    assert reporter_main.main(host.args()) == 2
    records = [json.loads(p.read_text()) for p in sorted((host.state / "buffer").glob("*.json"))]
    assert [r["fetching"]["queues"].get("BNL_PanDA_1", {}).get("attempts") for r in records] == [
        None, 1]
