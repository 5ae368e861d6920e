"""The monitor's pages in a real browser: headless Chromium (Debian's) against the live
server, after logging in; it checks what a person sees and keeps screenshots in
`test-artifacts/` at the repository root.

Chromium's command line cannot set a cookie, so this test's own URL map adds a login
shortcut (`/test-login/<user>/?next=...`) that exists only while the test runs
(`override_settings(ROOT_URLCONF=...)` pointing at this module).
"""

from __future__ import annotations

import datetime as dt
import html
import os
import re
import struct
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from django.contrib.auth import get_user_model, login
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.test import override_settings
from django.urls import include, path
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme

from clusterwatch.monitor.ingest import tokens
from tests.monitor.records import QUEUE, all_fetches_failing, as_key, example, recent, store

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
WINDOW = (1280, 1600)
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--hide-scrollbars"]
CHROMIUM_TIMEOUT_S = 90


def _test_login(request: HttpRequest, username: str) -> HttpResponse:
    user = get_user_model().objects.get(username=username)
    login(request, user, backend="django.contrib.auth.backends.ModelBackend")
    target = request.GET.get("next", "/")
    if not url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}):
        target = "/"
    return HttpResponseRedirect(target)


urlpatterns = [
    path("test-login/<str:username>/", _test_login),
    path("", include("clusterwatch.monitor.urls")),
]


def visible_text(dom: str) -> str:
    """What a person reads: the body's text, without the style sheet, spaces collapsed."""
    body = dom.split("<body", 1)[-1]
    body = re.sub(r"<(style|script)\b.*?</\1>", " ", body, flags=re.S)
    body = re.sub(r"</?(?:time|span|strong|a|em)\b[^>]*>", "", body)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", body)).split())


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


class Browser:
    def __init__(self, binary: str, base_url: str, scratch: Path) -> None:
        self.binary = binary
        self.base_url = base_url
        self.scratch = scratch

    def _run(self, page: str, *extra: str) -> subprocess.CompletedProcess[str]:
        url = f"{self.base_url}/test-login/operator/?next={quote(page)}"
        profile = self.scratch / "profile"
        profile.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, HOME=str(self.scratch))
        done = subprocess.run(
            [self.binary, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *extra, url],
            capture_output=True, text=True, timeout=CHROMIUM_TIMEOUT_S, env=env, check=False)
        assert done.returncode == 0, done.stderr[-2000:]
        return done

    def text(self, page: str) -> str:
        dom = self._run(page, "--dump-dom").stdout
        assert "<script" not in dom  # the pages need no JavaScript
        return visible_text(dom)

    def screenshot(self, page: str, name: str) -> Path:
        ARTIFACTS.mkdir(exist_ok=True)
        target = ARTIFACTS / name
        target.unlink(missing_ok=True)
        self._run(page, f"--screenshot={target}", f"--window-size={WINDOW[0]},{WINDOW[1]}")
        data = target.read_bytes()
        assert len(data) > 20_000, "a screenshot this small shows (almost) nothing"
        assert png_size(data) == WINDOW
        return target


@pytest.fixture
def browser(live_server: Any, need_binary: Callable[[str], str], tmp_path: Path,
            django_user_model: Any) -> Browser:
    binary = need_binary("chromium")
    django_user_model.objects.create_user("operator", password="not used: test login")
    return Browser(binary, live_server.url, tmp_path)


@override_settings(ROOT_URLCONF=__name__)
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


@override_settings(ROOT_URLCONF=__name__)
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


@override_settings(ROOT_URLCONF=__name__)
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
