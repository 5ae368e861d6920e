"""Helpers of the share links' tests: a link made through the job page's form, what a page
links to, and a check that says whether a secret shows without ever printing it.

A link's token is a secret: no assertion here or in the tests prints one (a failing
comparison would), so checks return booleans or counts, and messages name the link by
its prefix only.
"""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser
from typing import NamedTuple

from django.http import HttpResponse
from django.test import Client

from clusterwatch.monitor.usage.share_links import TOKEN_RE, shared_path

_SHOWN = re.compile(r'value="http://testserver(/usage/shared/(cws_[^"/]+)/)"')


class Made(NamedTuple):
    """A link as the form answered it: its page's path and its token (never printed)."""

    path: str
    token: str

    @classmethod
    def of(cls, token: str) -> Made:
        return cls(shared_path(token), token)

    @property
    def prefix(self) -> str:
        return self.token[:12]

    @property
    def secret(self) -> str:
        return self.token[13:]

    def __repr__(self) -> str:
        return f"Made({self.prefix}_…)"


def make_link(client: Client, jobid: str = "4242", days: str = "7") -> Made:
    """The link the job page's form makes; AssertionError (without the token) otherwise."""
    answer = client.post(f"/usage/jobs/{jobid}/share", {"days": days})
    assert answer.status_code == 200, f"the form answered {answer.status_code}"
    found = _SHOWN.findall(answer.content.decode())
    assert len(found) == 1, f"the answer shows {len(found)} links"
    path, token = found[0]
    assert TOKEN_RE.fullmatch(token) is not None, "not a share token"
    return Made(path, token)


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, str]] = []  # (tag, the address it names)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("href", "src", "action", "formaction", "srcset", "data",
                        "poster") and value is not None:
                self.found.append((tag, html.unescape(value)))
        if tag in ("form", "base", "iframe", "script", "link", "object", "embed"):
            self.found.append((tag, ""))


def addresses_of(content: bytes) -> list[tuple[str, str]]:
    """Every (tag, address) of the page, and every tag that could lead elsewhere."""
    parser = _Links()
    parser.feed(content.decode())
    return parser.found


def get(made: Made, tail: str = "", client: Client | None = None) -> HttpResponse:
    """The answer to the link's page or the path `tail` under it (a failing assertion shows
    the Made, whose repr hides the secret, never the path)."""
    return (client or Client()).get(made.path + tail)


def carries(text: str | bytes, made: Made) -> bool:
    """Whether `text` holds the link's secret part (its prefix alone is no secret)."""
    secret = made.secret
    return (secret.encode() if isinstance(text, bytes) else secret) in text
