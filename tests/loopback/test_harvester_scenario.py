"""The demo's harvester logs and database rows, read back by the reporter's own parsers."""

from __future__ import annotations

import calendar
import json
import re
import stat
import time
from pathlib import Path

from clusterwatch.loopback import harvester_fixture, harvester_logs, harvester_scenario
from clusterwatch.reporter.harvester_log import (
    failed_calls_section,
    fetching_section,
    submission_section,
)

START = calendar.timegm((2026, 10, 2, 18, 0, 0))
STAMP = re.compile(rb"^(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}),\d{3}", re.M)


def stamps(text: str) -> list[float]:
    return [float(calendar.timegm(time.strptime(m.group(1).decode(), "%Y-%m-%d %H:%M:%S")))
            for m in STAMP.finditer(text.encode())]


def test_fitted_fixture_logs_keep_their_order_inside_the_interval() -> None:
    logs = harvester_logs.fitted(harvester_logs.fixture_logs("new"), START, START + 4)
    assert set(logs) == set(harvester_logs.LOG_NAMES)
    for text in logs.values():
        times = stamps(text)
        assert times == sorted(times)
        assert all(START <= t <= START + 4 for t in times)
    # Same content, only the times moved.
    original = harvester_logs.fixture_logs("new")
    for name, text in logs.items():
        assert STAMP.sub(b"T", text.encode()) == STAMP.sub(b"T", original[name].encode())


def test_the_broken_harvester_fails_every_fetch_with_a_certificate_error() -> None:
    text = "".join(harvester_logs.fetch_cert_failure(START + n, "BNL_GPU_1", 35,
                                                     harvester_scenario.PANDA)
                   for n in range(5))
    section = fetching_section([text.encode()])
    queue = section["queues"]["BNL_GPU_1"]
    assert (queue["attempts"], queue["failed"], queue["errors"]) == (5, 5, {"SSLError": 5})
    assert "CERTIFICATE_VERIFY_FAILED" in queue["last"]["outcome"]
    calls = failed_calls_section([harvester_logs.get_jobs_cert_failure(
        START, "BNL_GPU_1", harvester_scenario.PANDA).encode()])
    assert "CERTIFICATE_VERIFY_FAILED" in json.dumps(calls)


def test_the_healthy_harvester_fetches_and_pushes_jobs_to_workers() -> None:
    text = (harvester_logs.fetch(START, "BNL_PanDA_1", 35, 20)
            + harvester_logs.fetch(START + 1, "UM_GREX_PanDA_1", 10, 0, "no jobs in PanDA")
            + harvester_logs.submitted(START + 2, "BNL_PanDA_1", "h.example.org",
                                       [(8817000, 6723500), (8817001, 6723600)],
                                       {"nQueue": 12, "nReady": 0, "nRunning": 41,
                                        "nNewWorkers": 2}))
    fetching = fetching_section([text.encode()])
    assert fetching["queues"]["BNL_PanDA_1"]["jobs_got"] == 20
    assert fetching["queues"]["UM_GREX_PanDA_1"]["failed"] == 0
    submission = submission_section([text.encode()])
    pushes = {(p["workerid"], p["pandaid"]) for p in submission["recent_pushes"]}
    assert pushes == {(8817000, 6723500), (8817001, 6723600)}
    assert submission["queues"]["BNL_PanDA_1"]["workers_status"]["nRunning"] == 41


def test_ended_workers_fall_in_whole_seconds_after_the_interval_start() -> None:
    rows = harvester_fixture.ended("BNL_PanDA_1", "h", START + 0.4, START + 4.0, 100,
                                   (1500, 2400, 3300))
    ends = [row["endTime"] for row in rows]
    assert ends == ["2026-10-02 18:00:02", "2026-10-02 18:00:03", "2026-10-02 18:00:04"]
    assert [row["status"] for row in rows] == ["finished"] * 3


def test_a_host_without_a_database_gets_a_sqlite_config_and_private_files(
    tmp_path: Path,
) -> None:
    host = next(h for h in harvester_scenario.harvesters(tmp_path) if h.schema is None)
    harvester_scenario.set_up(host, None, "unused", START)
    assert "engine = sqlite" in host.cfg.read_text()
    assert stat.S_IMODE(host.cfg.stat().st_mode) == 0o600
    host.write_env("http://127.0.0.1:8000", "cwh_token")
    assert stat.S_IMODE(host.env_file.stat().st_mode) == 0o600
    assert host.env_file.read_text() == (
        f"SWF_MONITOR_URL=http://127.0.0.1:8000/api/host-reports/{host.key}/\n"
        "SWF_REPORT_TOKEN=cwh_token\n")
    assert (host.log_dir / "panda-job_fetcher.log").read_text()  # history before run 1
