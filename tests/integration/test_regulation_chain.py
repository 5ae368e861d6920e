"""Telemetry 1.3 end to end: a harvester's real MariaDB (the loopback scenario's rows, with
`cache_table` and workers starting between two runs) and template-merged queue
configuration, read by the built zipapp under the system python3 with `--interval-s 60`, the
record stored by the monitor's ingest and read on the queue and hosts pages."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import jsonschema
import pytest
from django.test import Client

from clusterwatch.loopback import harvester_scenario as scenario
from clusterwatch.loopback.mariadb import MariaDB
from clusterwatch.reporter.record import load_schema
from tests.monitor.records import store
from tests.support.harvester_db import PASSWORD
from tests.support.page_text import text_of
from tests.support.reporter_zipapp import SYSTEM_PYTHON

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


def test_it_carries_regulation_from_the_harvester_database_to_the_queue_page(
        tmp_path: Path, operator: Client, zipapp: Path,
        mariadb_scratch: MariaDB) -> None:
    host = next(h for h in scenario.harvesters(tmp_path) if h.schema and not h.broken)
    queue = host.queues[0]
    run = [SYSTEM_PYTHON, str(zipapp), *host.reporter_args(["/"]), "--interval-s", "60"]
    db = mariadb_scratch  # the session's server; this test's schema is dropped after it
    scenario.set_up(host, db, PASSWORD, time.time())
    first = subprocess.run(run, capture_output=True, text=True, check=False)
    assert first.returncode == 2, first.stderr  # no monitor configured: buffered
    started = time.time()
    time.sleep(2.2)  # two whole seconds for the two workers' start times
    scenario.interval(host, db, started, time.time() - 0.1, 1)
    printed = subprocess.run([*run, "--print"], capture_output=True, text=True,
                             check=False)
    assert printed.returncode == 0, printed.stderr
    record = json.loads(printed.stdout)
    jsonschema.Draft202012Validator(load_schema()).validate(record)
    database = record["harvester_db"]
    assert database["worker_starts"][queue] == {"started": 2, "by_status": {"running": 2}}
    assert database["job_demand_cache"]["job_statistics.json"]["age_s"] >= 240
    limit = database["launch_limits"][queue]["limit_in_force"]
    assert limit == {"value": 8, "at_most": 200, "running_workers": 43, "derivation": (
        "nQueueLimitWorker 200 -> 200; nQueueLimitWorkerRatio 20% of 43 running = 8 "
        "-> min(200, 8) = 8")}
    state = record["queue_status"]["queues"][queue]
    assert (state["status"], state["active"]) == ("online", True)
    assert record["interval"]["expected_s"] == 60

    store(record)
    text = text_of(operator.get(f"/queues/{queue}/"))
    assert "Limit in force 8 Running workers it used 43" in text
    assert "Workers started in the interval 2 (now running 2)" in text
    assert "Cache job_statistics.json" in text and "Cache job_statistics_new.json" in text
    assert "STALE" not in text
