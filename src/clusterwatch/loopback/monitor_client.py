"""Reading the monitor over HTTP as a person or a script would: a plain GET, and an
operator's session that logs in through the login form (cookies and CSRF token included).

Redirects are answers in their own right (a page sends an anonymous visitor to the login
page), so neither follows them; neither uses a proxy from the environment.
"""

from __future__ import annotations

import http.cookiejar
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from typing import Any, Optional

LOGIN_PATH = "/accounts/login/"


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect is an answer in itself (e.g. to the login page), not something to follow."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


# Never through a proxy from the environment: the server is on loopback.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect())


def get(url: str, timeout: float = 10.0,
        headers: Optional[Mapping[str, str]] = None) -> tuple[int, bytes]:
    """(status, body) of a GET, also for 4xx/5xx; OSError when nothing answers."""
    request = urllib.request.Request(url, headers=dict(headers or {}))  # noqa: S310 - loopback
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            return int(response.status), bytes(response.read())
    except urllib.error.HTTPError as exc:
        return int(exc.code), exc.read()


class Session:
    """A logged-in operator's cookies, for reading pages the way a browser does."""

    _CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url.rstrip("/")
        self.cookies = http.cookiejar.CookieJar()
        self._opener = urllib.request.build_opener(
            urllib.request.ProxyHandler({}), _NoRedirect(),
            urllib.request.HTTPCookieProcessor(self.cookies))

    def get(self, path: str, timeout: float = 10.0) -> tuple[int, bytes]:
        return self._open(urllib.request.Request(self.base_url + path), timeout)  # noqa: S310

    def login(self, username: str, password: str) -> None:
        """Logs in through /accounts/login/; AssertionError when the form refuses."""
        status, page = self.get(LOGIN_PATH)
        found = self._CSRF.search(page.decode("utf-8", "replace"))
        if status != 200 or found is None:
            raise AssertionError(f"no login form at {LOGIN_PATH} (status {status})")
        form = urllib.parse.urlencode({"csrfmiddlewaretoken": found.group(1),
                                       "username": username, "password": password})
        request = urllib.request.Request(  # noqa: S310 - loopback
            self.base_url + LOGIN_PATH, data=form.encode(), method="POST",
            headers={"Content-Type": "application/x-www-form-urlencoded",
                     "Referer": self.base_url + LOGIN_PATH})
        status, _ = self._open(request, 10.0)
        if status != 302:
            raise AssertionError(f"login as {username!r} refused (status {status})")

    def _open(self, request: urllib.request.Request, timeout: float) -> tuple[int, bytes]:
        try:
            with self._opener.open(request, timeout=timeout) as response:
                return int(response.status), bytes(response.read())
        except urllib.error.HTTPError as exc:
            return int(exc.code), exc.read()
