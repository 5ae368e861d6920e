"""The queue page of a remote harvester (a record built from the PanDA server's rows, stored
through the ingest path) in headless Chromium, with a screenshot in `test-artifacts/`; the
harness (login shortcut, Browser) is test_monitor_browser's."""

from __future__ import annotations

import pytest
from django.test import override_settings

from clusterwatch.monitor.panda.remote_record import build_record
from clusterwatch.monitor.panda.remote_report import store
from tests.integration.test_monitor_browser import Browser
from tests.integration.test_monitor_browser import browser as browser  # the fixture
from tests.monitor.panda.remote_rows import EPIC, GPU, HARVESTER, KEY, NOW, perlmutter_config
from tests.monitor.panda.test_remote_record import perlmutter_rows

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


@override_settings(ROOT_URLCONF="tests.integration.test_monitor_browser")
def test_it_shows_a_remote_harvesters_queue_page_in_a_browser(browser: Browser) -> None:
    assert store(KEY, build_record(HARVESTER, KEY, perlmutter_rows(), perlmutter_config(), NOW),
                 1000)
    text = browser.text(f"/queues/{EPIC}/")
    assert f"PanDA queue {EPIC}" in text
    assert f"Remote harvester {HARVESTER} (built from the PanDA server)" in text
    assert "Last heartbeat 2026-10-02 18:26:00Z" in text and "Version 0.7.5" in text
    assert "Queue status online" in text and "NoJob / self" in text
    assert "nQueueLimitWorkerRatio 50% of 12 running = 6 -> min(100, 6) = 6" in text
    assert "its pilots fetch their own jobs" in text
    assert "login31.chn.perlmutter.nersc.gov" in text
    assert "failed to submit a workerID=# with sbatch" in text
    assert "its process table is not readable" in text
    assert "Not in the harvester registry: perlmutter-harvester" in text
    gpu = browser.text(f"/queues/{GPU}/")
    assert "Queue status brokeroff" in gpu and "failed to submit" not in gpu
    browser.screenshot(f"/queues/{EPIC}/", "monitor-queue-remote.png")
