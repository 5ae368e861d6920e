"""Log text is data: a NUL in a harvester log line (or anything else no database stores)
reaches the monitor, replaced and counted, instead of making the whole record unstorable.

The reporter runs as cron runs it (the zipapp); the monitor runs under gunicorn as it is
shipped, on SQLite (or on PostgreSQL, whose jsonb refuses NUL, during scripts/test's
PostgreSQL pass, through `private_database`).
"""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clusterwatch.loopback.monitor_server import MonitorServer, monitor_server, private_database
from clusterwatch.reporter.buffer import Buffer
from tests.support.harvester_host import Host
from tests.support.reporter_zipapp import run_app

from .main_support import FETCH_OK, validate

KEY = "testhost"
REPLACEMENT = "\ufffd"
NUL_OUTCOME = ("2026-10-02 18:20:44,507 panda.log.job_fetcher: INFO     run "
               "<queueName=BNL_PanDA_1> got 0 jobs for prodSourceLabel=managed rtype=None "
               "with failed: \x00\x00garbled answer  : took 2.816 sec\n")
NUL_QUEUE = ("2026-10-02 18:21:44,507 panda.log.job_fetcher: INFO     run <queueName=CERN\x00_1> "
             "got 3 jobs for prodSourceLabel=managed rtype=None with OK  : took 1.0 sec\n")


@pytest.fixture(scope="module")
def monitor(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[MonitorServer, str]]:
    root = tmp_path_factory.mktemp("monitor")
    with private_database(root) as database, \
            monitor_server(root / "data", database=database, workers=1) as server:
        token = server.manage("create_host_token", KEY).stdout.strip().splitlines()[-1]
        yield server, token


def configured_host(root: Path, monitor: tuple[MonitorServer, str]) -> Host:
    server, token = monitor
    host = Host(root)
    host.configure(f"{server.url}/api/host-reports/{KEY}/", token=token)
    return host


def latest_record(monitor: tuple[MonitorServer, str]) -> dict[str, Any]:
    server, token = monitor
    request = urllib.request.Request(f"{server.url}/api/host-reports/{KEY}/",
                                     headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=30) as answer:  # loopback only
        found: dict[str, Any] = json.loads(answer.read())["record"]
    return found


def test_it_delivers_a_log_line_holding_nul_characters(
    tmp_path: Path, zipapp: Path, monitor: tuple[MonitorServer, str]
) -> None:
    host = configured_host(tmp_path, monitor)
    first = run_app(zipapp, *host.args())
    assert first.returncode == 0, first.stderr
    # `collected_at` has whole seconds and the monitor's latest moves only to a newer one:
    # a second run within the same second would not be the record read back below.
    time.sleep(1.05 - time.time() % 1)
    host.append(FETCH_OK.format(t="2026-10-02 18:19:44") + NUL_OUTCOME + NUL_QUEUE)
    done = run_app(zipapp, *host.args())
    assert done.returncode == 0, done.stderr
    assert not list((host.state / "set_aside").glob("*.json"))

    record = latest_record(monitor)
    validate(record)
    queues = record["fetching"]["queues"]
    assert queues["BNL_PanDA_1"]["attempts"] == 2  # the garbled line counted, not dropped
    last = queues["BNL_PanDA_1"]["last"]
    assert REPLACEMENT * 2 + "garbled answer" in last["outcome"]
    assert REPLACEMENT * 2 + "garbled answer" in last["error_class"]
    assert queues["CERN" + REPLACEMENT + "_1"]["jobs_got"] == 3
    replaced = record["characters_replaced"]
    # two in each of the outcome, the error class, the errors' key and (1.9) the failing
    # streak's key; one in the queue's name
    assert replaced["count"] == 9
    assert any(where.startswith("fetching.queues.BNL_PanDA_1.failing_errors.")
               for where in replaced["where"])
    assert "fetching.queues.BNL_PanDA_1.last.outcome" in replaced["where"]


def test_it_repairs_a_record_buffered_before_it_knew_how(
    tmp_path: Path, zipapp: Path, monitor: tuple[MonitorServer, str]
) -> None:
    """A record an older reporter buffered with a NUL in it still goes, repaired."""
    host = Host(tmp_path)
    host.without_monitor()
    assert run_app(zipapp, *host.args()).returncode == 2
    buffer = Buffer(str(host.state))
    (name,) = buffer.names()
    old = json.loads(buffer.read(name))
    old["hostname"] = "harvester\x00host"
    buffer.remove(name)
    buffer.add(old)
    server, token = monitor
    host.configure(f"{server.url}/api/host-reports/{KEY}/", token=token)

    done = run_app(zipapp, *host.args())
    assert done.returncode == 0, done.stderr
    assert not list((host.state / "set_aside").glob("*.json"))
    assert buffer.names() == []


def test_it_makes_keys_and_values_storable_without_merging_keys() -> None:
    from clusterwatch.reporter.storable import make_storable

    record = {"a\x00": {"b": "x\ud800y"}, "a" + REPLACEMENT: 1, "list": ["\x00", "ok"]}
    repaired = make_storable(record)
    assert repaired["a" + REPLACEMENT] == 1
    assert repaired["a" + REPLACEMENT + "#2"] == {"b": "x" + REPLACEMENT + "y"}
    assert repaired["list"] == [REPLACEMENT, "ok"]
    assert repaired["characters_replaced"]["count"] == 3
    json.dumps(repaired).encode("utf-8")  # no lone surrogate left
    assert make_storable({"clean": "text"}) == {"clean": "text"}
