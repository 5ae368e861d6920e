"""Telemetry 1.3-1.7 end to end, every part as it runs in production: a harvester host of the
loopback scenario with its real MariaDB (limits, live workers, `cache_table`, workers that
start between two runs) plus the admission fixtures' six workers ended in the hour (exit 73
refusals on one slot and on the grid universe, a SIGTERM cancellation, an error, a finished
one) with their condor event logs and launcher stderr on disk; the reporter built as the
zipapp and run twice by the system python3, posting over HTTP to the monitor under gunicorn
on 127.0.0.1 with a token from `create_host_token`; an operator logged in through the form in
headless Chromium reading the queue page and /panda/worker-starts/.

Every time is taken from the scenario's clock (`Scenario.interval` / `report` wait for whole
seconds; the fixtures' rows are dated from the moment the host was set up), so the figures
below are exact. During scripts/test's PostgreSQL pass the monitor runs on PostgreSQL.
"""

from __future__ import annotations

import calendar
import hashlib
import json
import re
import secrets
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from clusterwatch.loopback import harvester_fixture as db_fixture
from clusterwatch.loopback import harvester_scenario as scenario
from clusterwatch.loopback.http_recorder import fake_slack
from clusterwatch.loopback.mariadb import MariaDB
from clusterwatch.loopback.monitor_server import MonitorServer, monitor_server, private_database
from tests.integration.browser_support import ARTIFACTS, visible_text
from tests.integration.scenario_support import CREATE_OPERATOR, LATEST, Scenario
from tests.monitor.usage.chromium_pipe import Chromium
from tests.support.admission_db import BASE, ROWS, SUBDIR
from tests.support.admission_section import FILES
from tests.support.harvester_db import PASSWORD as DB_PASSWORD

pytestmark = pytest.mark.integration
ENDED_AGO_S = 600  # the admission workers ended this long before the host was set up
RAN_S = 600  # after running this long (their recorded wall time)


def admission_rows(host: scenario.Harvester, now: float) -> list[dict[str, Any]]:
    """The admission test's six workers of the hour (not the two outside it), moved to the
    host's first queue, dated from `now`, their files' URLs under the queue's logBaseURL."""
    queue, base = host.queues[0], f"https://{host.fqdn}/condor_logs"
    rows = []
    for row in ROWS[:6]:
        moved = dict(row, queueName=queue, computingSite=queue,
                     submitTime=db_fixture.utc(now - ENDED_AGO_S - RAN_S - 60),
                     startTime=db_fixture.utc(now - ENDED_AGO_S - RAN_S),
                     endTime=db_fixture.utc(now - ENDED_AGO_S))
        moved["workAttributes"] = row["workAttributes"].replace(BASE, base)
        rows.append(moved)
    return rows


def stored(server: MonitorServer, key: str) -> dict[str, Any]:
    done = server.manage("shell", "-c", LATEST % key)
    records: list[dict[str, Any]] = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(records) == 1
    return records[0]


def page(browser: Chromium, server: MonitorServer, path: str) -> str:
    browser.open(server.url + path)
    assert browser.evaluate("location.pathname + location.search") == path
    dom = browser.dom()
    assert "<script" not in dom  # the pages need no JavaScript
    return visible_text(dom)


def test_it_carries_telemetry_from_the_harvester_to_the_operators_browser(
        tmp_path: Path, python3: str, zipapp: Path, mariadb_scratch: MariaDB,
        need_binary: Callable[[str], str]) -> None:
    chromium = need_binary("chromium")
    host = next(h for h in scenario.harvesters(tmp_path / "hosts") if h.schema and not h.broken)
    queue = host.queues[0]
    password = secrets.token_urlsafe(16)

    db = mariadb_scratch  # the session's server; this test's schema is dropped after it
    with private_database(tmp_path) as database, \
            monitor_server(tmp_path / "monitor", database=database, workers=1) as server, \
            fake_slack() as slack:
        run = Scenario(server, slack, host, python3, zipapp, volume=str(tmp_path))
        run.token = server.manage("create_host_token", host.key).stdout.strip().splitlines()[-1]
        server.manage("shell", "-c", CREATE_OPERATOR, extra_environ={"CW_TEST_PASSWORD": password})
        set_up_at = _set_up(host, db, run)

        run.report()  # the first run: log positions set, its record posted
        first = stored(server, host.key)
        start, end = run.interval()
        scenario.interval(host, db, start, end, 1)  # 3 workers end, 2 start
        run.report()
        record = stored(server, host.key)

        browser = Chromium(chromium, tmp_path)
        try:
            browser.open(f"{server.url}/hosts/")
            browser.submit_login("operator", password)
            queue_text = page(browser, server, f"/queues/{queue}/")
            browser.screenshot(_artifact("monitor-telemetry-queue.png"))
            starts_text = page(browser, server, "/panda/worker-starts/")
            browser.screenshot(_artifact("monitor-telemetry-worker-starts.png"))
        finally:
            browser.close()

    # The files are read once: the first run reads the six workers' files, the second takes
    # them from its state (the interval's three have no files to read).
    assert first["admission"]["read"] == {"records_read": 6, "from_cache": 0, "deferred": 0,
                                          "cap": 4000}
    assert record["admission"]["read"] == {"records_read": 0, "from_cache": 6, "deferred": 0,
                                           "cap": 4000}
    _assert_queue_page(queue_text, host, record, set_up_at)
    _assert_worker_starts_page(starts_text, host, first, record)
    said = "\n".join([*run.outputs, queue_text, starts_text, server.log_path.read_text()])
    assert run.token not in said and DB_PASSWORD not in said


def _set_up(host: scenario.Harvester, db: MariaDB, run: Scenario) -> int:
    """The host as it stands before the first run, plus the admission workers and files;
    the clock it was set up at, in whole seconds (the rows' times are whole seconds)."""
    now = float(int(time.time()))
    scenario.set_up(host, db, DB_PASSWORD, now)
    db_fixture.insert(db, host.schema or "", {"work_table": admission_rows(host, now)})
    shutil.copytree(FILES, host.root / "condor_logs" / SUBDIR)
    host.write_env(run.server.url, run.token)
    assert host.env_file.stat().st_mode & 0o777 == 0o600
    return int(now)


def _artifact(name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS / name


def _seconds(utc: str) -> int:
    return calendar.timegm(time.strptime(utc, "%Y-%m-%dT%H:%M:%SZ"))


def _assert_queue_page(text: str, host: scenario.Harvester, record: dict[str, Any],
                       set_up_at: int) -> None:
    collected = _seconds(record["collected_at"])
    # Regulation (1.3): 41 running in the history plus the 2 that started in the interval.
    # The template's maximum 500 is held to nQueueLimitWorker 200, as the harvester does.
    assert "nQueueLimitWorkerRatio 20 nQueueLimitWorkerMin 5 nQueueLimitWorkerMax 200" in text
    assert "Limit in force 8 Running workers it used 43" in text
    assert ("Derived nQueueLimitWorker 200 -> 200; nQueueLimitWorkerRatio 20% of 43 running "
            "= 8 -> min(200, 8) = 8") in text
    assert "Workers started in the interval 2 (now running 2)" in text
    for key, age in (("job_statistics.json", 240), ("job_statistics_new.json", 300),
                     ("panda_queues.json", 900)):  # cache_table's rows, as the cacher left them
        updated = time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(set_up_at - age))
        since = collected - (set_up_at - age)
        assert 0 <= since - age < 60, "the second run came over a minute after the set-up"
        assert (f"Cache {key} {updated}, " in text
                and f"; age when collected {since // 60} min" in text), key
    # Queue status (1.5) and pilot dispatch (1.6) from the queue's own template.
    sha = hashlib.sha256((host.root / "submit_pilot.sdf").read_bytes()).hexdigest()
    assert "Queue status online" in text
    assert "Pilot dispatch image_bound (image-bound: its pilots run only jobs of the image " \
           "below)" in text
    assert f"Images {scenario.PILOT_IMAGE}" in text
    assert f"Template {host.root / 'submit_pilot.sdf'} sha256 {sha[:12]}" in text
    shown = record["collected_at"].replace("T", " ")
    assert re.search(rf"Evidence read {re.escape(shown)}, (just now|\d+ s ago)", text), text
    assert "STALE" not in text


def _assert_worker_starts_page(text: str, host: scenario.Harvester, first: dict[str, Any],
                               record: dict[str, Any]) -> None:
    assert "Worker starts and admission" in text
    assert ("Recorded wall time is the harvester's endTime \u2212 startTime : it includes "
            "the worker's startup and the harvester's polling and reporting delay") in text
    assert ("Slot-busy time ( TimeSlotBusy ) and execution time ( TimeExecute ) are the "
            "HTCondor event log's own measurements, given separately") in text
    assert "A started worker is not payload capacity" in text
    interval_s = record["interval"]["seconds"]
    # The interval runs from the first run's clock to the second's: its seconds are their
    # difference rounded, the collection times their whole seconds (so within one second).
    assert record["interval"]["since"] == first["collected_at"]
    assert abs(interval_s - (_seconds(record["collected_at"])
                             - _seconds(first["collected_at"]))) <= 1
    # The row: 2 started in the interval (both still running); the live workers; then how
    # the hour's workers ended: 3 refused, 1 cancelled, 1 error, 4 finished (the admission
    # fixture's one and the interval's three), 0 unclassified; the refusals' recorded wall
    # (3 x 600 s) beside the event log's slot-busy (2 x 120 s) and execution (2 x 95 s)
    # times, which the grid-universe refusal lacks; evidence for the fixture's six, none for
    # the interval's three (no files in their work attributes).
    row = (f"{host.key} {host.queues[0]} 2 in {interval_s} s now running 2 running 43, "
           "submitted 6, idle 3")
    assert row in text, text
    after = text.split(row, 1)[1]
    jobs = record["fetching"]["queues"][host.queues[0]]["jobs_got"]
    assert re.match(rf" {jobs} 3 1 1 4 0 1800 s 3 of 3 240 s 2 of 3 190 s 2 of 3 "
                    r"6 with, 3 without why ", after), after[:400]
    # Why evidence is missing is listed under the table (a long reason in a cell made the
    # row tens of lines tall and pushed the time columns off a laptop's screen).
    assert (f"Workers of {host.queues[0]} on {host.key} without evidence, and why 3: no local "
            "path for the worker's batchLog URL; no local path for the worker's stdErr URL"
            ) in text
    assert (f"{host.key} {host.queues[1]} 0 in {interval_s} s running 41, submitted 6, idle 3 "
            "0 no worker of this queue ended in the last hour") in text
    assert (f"Refusals of {host.queues[0]} on {host.key}, by slot and admission floor") in text
    # Newest first (the same end time: the higher worker ID first).
    assert ("slot1_3@wn01.example.edu 7200 s 2 repeated 3400 s 2, wn01.example.edu, BNL_OSG_1 "
            "1, wn01.example.edu, BNL_OSG_1") in text
    assert "— (not in the event log) — 1 — 3, wn03.example.edu, BNL_OSG_1" in text
    assert f"{host.key} counts exit 73 as refusals." in text
    assert "Software directory" not in text
