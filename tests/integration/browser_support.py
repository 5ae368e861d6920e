"""The monitor's pages in headless Chromium (Debian's), for the integration tests.

Chromium's command line cannot set a cookie, so the browser tests' own URL map (this module's
`urlpatterns`, set with `override_settings(ROOT_URLCONF=LOGIN_URLCONF)`) adds a login
shortcut (`/test-login/<user>/?next=...`) that exists only while such a test runs. What a
person reads is the page's text (`visible_text`); screenshots go to `test-artifacts/` at the
repository root.
"""

from __future__ import annotations

import html
import os
import re
import struct
import subprocess
from pathlib import Path
from urllib.parse import quote

from django.contrib.auth import get_user_model, login
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import include, path
from django.utils.http import url_has_allowed_host_and_scheme

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
# The URL map of the browser tests: the monitor's, and the login shortcut.
LOGIN_URLCONF = __name__
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
    path("", include("clusterwatch.monitor.site.urls")),
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
