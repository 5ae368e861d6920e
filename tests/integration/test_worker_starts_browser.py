"""Reporter to monitor to browser for telemetry 1.4: the real reporter reads a real MariaDB
work_table and the workers' event logs and launcher stderr, its record passes the monitor's
schema check and ingest, and /panda/worker-starts/ shows it in headless Chromium."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import override_settings

from clusterwatch.monitor.ingest.validation import schema_problem
from clusterwatch.reporter import main as reporter_main
from tests.monitor.records import store
from tests.support.harvester_host import Host

from .browser_support import LOGIN_URLCONF, Browser

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


@override_settings(ROOT_URLCONF=LOGIN_URLCONF)
def test_it_shows_what_the_reporter_read_on_the_worker_starts_page(
        browser: Browser, admission_host: Host, capsys: pytest.CaptureFixture[str]) -> None:
    assert reporter_main.main(admission_host.args("--print")) == 0
    record: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert schema_problem(record) is None
    store(record)

    text = browser.text("/panda/worker-starts/")
    browser.screenshot("/panda/worker-starts/", "worker-starts.png")

    assert "Worker starts and admission" in text
    assert "includes the worker's startup and the harvester's polling and reporting delay" in text
    assert "A started worker is not payload capacity" in text
    # BNL_OSG_1: 3 refused, 1 cancelled, 1 error, 1 finished, 0 unclassified; slot-busy time
    # measured for 2 of the 3 refusals (the grid-universe one has none)
    assert "3 1 1 1 0" in text and "240 s 2 of 3" in text
    assert "slot1_3@wn01.example.edu 7200 s 2 repeated 3400 s" in text
    assert "Software directory" not in text
