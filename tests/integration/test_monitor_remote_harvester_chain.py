"""The remote harvester's whole chain, every part as it runs in production: the PanDA
server's tables on the loopback PostgreSQL filled with the Perlmutter-like rows (sticky
terminal statuses, the seven-day cutoff, dialogs that group into kinds, two login nodes'
metrics, a template-merged queue configuration with ratios on a NoJob and a push queue, a
queue naming a missing template); the installed `clusterwatch monitor remote_harvester_report`
run as the timer runs it (the password from a mode-600 file) into the monitor's database; the
stored record checked against the schema; then the queue pages and the hosts page read by
headless Chromium from gunicorn serving that same database, after logging in through the form.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import secrets
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from clusterwatch.loopback.monitor_server import MonitorServer, monitor_server, private_database
from clusterwatch.loopback.postgres import Postgres
from clusterwatch.monitor.panda.panda_settings import PASSWORD_SETTING
from tests.components import need_binary
from tests.integration.browser_support import ARTIFACTS, visible_text
from tests.integration.scenario_support import CREATE_OPERATOR, LATEST
from tests.monitor.panda.panda_tables import fill, fresh_database, shifted
from tests.monitor.panda.remote_rows import (
    DROPPED,
    EPIC,
    GPU,
    HARVESTER,
    KEY,
    NOW,
    PERLMUTTER_CONFIG,
    PUSH,
    assert_valid,
    perlmutter_rows,
)
from tests.monitor.usage.chromium_pipe import Chromium

pytestmark = pytest.mark.integration
CLUSTERWATCH = str(Path(sys.executable).with_name("clusterwatch"))


@dataclass(frozen=True)
class Chain:
    server: MonitorServer
    browser: Chromium
    report: subprocess.CompletedProcess[str]
    database_password: str = field(repr=False)


@pytest.fixture(scope="module")
def chain(loopback_postgres: Postgres,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[Chain]:
    """The PanDA rows dated at this clock's now, the command run once, a browser logged in."""
    binary = need_binary("chromium")
    tmp_path = tmp_path_factory.mktemp("remote-chain")
    panda = fresh_database(loopback_postgres)
    fill(panda, shifted(perlmutter_rows(),
                        dt.datetime.now(dt.timezone.utc).replace(microsecond=0) - NOW))
    password_file = tmp_path / "panda-password"
    password_file.write_text(f"{panda.password}\n")
    password_file.chmod(0o600)
    operator_password = secrets.token_urlsafe(16)
    with private_database(tmp_path) as database, monitor_server(
            tmp_path / "data", database=database, workers=1) as server:
        server.manage("shell", "-c", CREATE_OPERATOR,
                      extra_environ={"CW_TEST_PASSWORD": operator_password})
        # The server's own settings (CLUSTERWATCH_DATABASE_URL, data directory): the command
        # writes the database gunicorn reads.
        report = subprocess.run(
            [CLUSTERWATCH, "monitor", "remote_harvester_report", "--key", KEY,
             "--harvester-id", HARVESTER, "--queue-config", str(PERLMUTTER_CONFIG)],
            env={**server.environ, PASSWORD_SETTING: str(password_file),
                 "CLUSTERWATCH_PANDA_DATABASE_URL":
                     f"postgresql://{panda.user}@127.0.0.1:{panda.port}/{panda.dbname}"},
            capture_output=True, text=True, timeout=120, check=False)
        browser = Chromium(binary, tmp_path)
        try:
            browser.open(f"{server.url}/hosts/")
            browser.submit_login("operator", operator_password)
            yield Chain(server, browser, report, panda.password or "")
        finally:
            browser.close()


def page(chain: Chain, path: str) -> str:
    chain.browser.open(chain.server.url + path)
    assert chain.browser.evaluate("location.pathname") == path
    dom = chain.browser.dom()
    assert "<script" not in dom  # the pages need no JavaScript
    return visible_text(dom)


def stored(chain: Chain) -> list[dict[str, Any]]:
    done = chain.server.manage("shell", "-c", LATEST % KEY)
    # Django's shell says first how many objects it imported: the JSON is the last line.
    records: list[dict[str, Any]] = json.loads(done.stdout.strip().splitlines()[-1])
    return records


def test_it_builds_the_record_with_the_installed_command(chain: Chain) -> None:
    done = chain.report
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.strip() == f"stored the record of {HARVESTER} under {KEY}"
    assert chain.database_password not in done.stdout + done.stderr


def test_it_stores_a_record_the_schema_accepts_in_the_servers_database(chain: Chain) -> None:
    records = stored(chain)
    assert len(records) == 1
    record = records[0]
    assert_valid(record)
    workers = record["harvester_db"]["workers_now"]
    assert workers[EPIC]["running"] == 12  # the eight-day-old 'running' worker is not live
    assert record["queue_status"]["queues"][GPU]["status"] == "brokeroff"
    assert DROPPED not in record["queue_status"]["queues"]


def test_it_shows_the_remote_harvesters_queue_pages_in_a_browser(chain: Chain) -> None:
    text = page(chain, f"/queues/{EPIC}/")
    assert f"PanDA queue {EPIC}" in text
    assert f"Remote harvester {HARVESTER} (built from the PanDA server)" in text
    assert re.search(r"Last heartbeat \d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ", text)
    assert "Version 0.7.5" in text and "Queue status online" in text
    assert "NoJob / self" in text
    assert f"Not in the harvester registry: {KEY}" in text
    assert "nQueueLimitWorkerRatio 50% of 12 running = 6 -> min(100, 6) = 6" in text
    assert "its pilots fetch their own jobs" in text
    assert "login31.chn.perlmutter.nersc.gov" in text and "login32" in text
    assert "failed to submit a workerID=# with sbatch" in text
    assert "its process table is not readable" in text
    assert "Workers overdue 1 running" in text  # still 'running' eight days on
    ARTIFACTS.mkdir(exist_ok=True)
    chain.browser.screenshot(ARTIFACTS / "monitor-queue-remote.png")
    gpu = page(chain, f"/queues/{GPU}/")
    assert "Queue status brokeroff" in gpu and "failed to submit" not in gpu
    push = page(chain, f"/queues/{PUSH}/")
    assert "Queue status offline" in push and "its pilots fetch their own jobs" not in push


def test_it_lists_the_remote_harvester_on_the_hosts_page(chain: Chain) -> None:
    text = page(chain, "/hosts/")
    row = text.split(f"{KEY} login32.chn.perlmutter.nersc.gov reporter remote-builder", 1)
    assert len(row) == 2, text  # the key's row: the heartbeat's host, the builder's name
    assert re.match(r" [^Z]* \d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ, \d+ s ago record #1 "
                    f"{EPIC} {GPU} {PUSH} ", row[1]), row[1][:300]
    assert "STALE silent" not in text and "NEVER REPORTED" not in text
    assert "no logs readable (it runs under another account, on another host)" in row[1]
    chain.browser.screenshot(ARTIFACTS / "monitor-hosts-remote.png")
