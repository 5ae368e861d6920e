"""The monitor's pages in a real browser: headless Chromium (Debian's) against the live
server, after logging in; it checks what a person sees and keeps screenshots in
`test-artifacts/` at the repository root.

Chromium's command line cannot set a cookie, so this test's own URL map adds a login
shortcut (`/test-login/<user>/?next=...`) that exists only while the test runs
(`override_settings(ROOT_URLCONF=...)` pointing at tests/integration/browser_support.py).
"""

from __future__ import annotations

import datetime as dt
import os
import re
import subprocess

import pytest
from django.test import override_settings
from django.utils import timezone

from clusterwatch.monitor.ingest import tokens
from tests.monitor.records import QUEUE, all_fetches_failing, as_key, example, recent, store

from .browser_support import (
    CHROMIUM_FLAGS,
    CHROMIUM_TIMEOUT_S,
    LOGIN_URLCONF,
    Browser,
    visible_text,
)

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


@override_settings(ROOT_URLCONF=LOGIN_URLCONF)
def test_it_shows_the_hosts_page_in_a_browser(browser: Browser) -> None:
    now = timezone.now()
    store(recent(all_fetches_failing(example()), now - dt.timedelta(minutes=2)))
    store(as_key(recent(example(), now - dt.timedelta(minutes=40)), "osgsub01-harvester"))
    tokens.create(["never01"])
    text = browser.text("/hosts/")
    assert "Hosts" in text and "operator" in text and "Log out" in text
    assert re.search(r"pandaharvester01 .*\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ, 2 min ago", text)
    assert "osgsub01-harvester" in text and "STALE silent for 40 min" in text
    assert "never01 NEVER REPORTED" in text
    assert QUEUE in text and "communicator: 7" in text and "/: 25.8 % used" in text
    browser.screenshot("/hosts/", "monitor-hosts.png")


@override_settings(ROOT_URLCONF=LOGIN_URLCONF)
def test_it_shows_why_a_queue_gets_no_work_in_a_browser(browser: Browser) -> None:
    now = timezone.now()
    store(recent(all_fetches_failing(example()), now - dt.timedelta(minutes=1)))
    text = browser.text(f"/queues/{QUEUE}/")
    assert f"PanDA queue {QUEUE}" in text
    assert ("Why this queue gets no work every fetch in the last interval failed with "
            "SSLError (6 of 6)") in text
    assert "Error class: SSLError" in text
    assert ("[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: unable to get local "
            "issuer certificate") in text
    assert re.search(r"collected \d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ, 1 min ago", text)
    assert "Last fetch" in text and "STALE" not in text
    browser.screenshot(f"/queues/{QUEUE}/", "monitor-queue.png")


@override_settings(ROOT_URLCONF=LOGIN_URLCONF)
def test_it_shows_a_stale_queue_and_the_login_page_in_a_browser(browser: Browser) -> None:
    store(recent(all_fetches_failing(example()), timezone.now() - dt.timedelta(minutes=25)))
    text = browser.text(f"/queues/{QUEUE}/")
    assert "harvester silent for 25 min: data is stale" in text and "STALE" in text
    login_page = visible_text(subprocess.run(
        [browser.binary, *CHROMIUM_FLAGS, f"--user-data-dir={browser.scratch / 'anon'}",
         "--dump-dom", f"{browser.base_url}/hosts/"],
        capture_output=True, text=True, timeout=CHROMIUM_TIMEOUT_S, check=False,
        env=dict(os.environ, HOME=str(browser.scratch))).stdout)
    assert "Log in" in login_page and "User name" in login_page and "Password" in login_page
