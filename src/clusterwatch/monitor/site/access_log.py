"""gunicorn's access log without share links' secrets (gunicorn_conf's `logger_class`).

A share link (usage/share_links.py) is a secret in a URL: `/usage/shared/cws_<8>_<43>/...`.
gunicorn writes each request's line, path, query, referrer and headers to the access log;
here every value it formats has the secret part of such a token, and any other segment
after `/usage/shared/`, replaced by `[redacted]`. The token's prefix (`cws_` and 8
characters) stays: it opens nothing, and is what the admin shows to tell the links apart.

No Django here: gunicorn's master loads this before any application.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import unquote

from gunicorn.glogging import Logger

REDACTED = "[redacted]"
_TOKEN = re.compile(r"(cws_[A-Za-z0-9]{8})_[A-Za-z0-9_%-]+")
# Whatever else stands where a token goes: a wrong token is as secret as a right one might be.
_SEGMENT = re.compile(r"(/usage/shared/)(?!cws_[A-Za-z0-9]{8}_\[redacted\])[^/?#\s\"]+")


def _may_match(text: str) -> bool:
    """Whether either pattern can match: a substring test for each, instead of two regular
    expressions' scans of each of the ~60 atoms of every request."""
    return "cws_" in text or "/usage/shared/" in text


def redacted(text: str) -> str:
    if "%" in text:
        decoded = unquote(text)
        if _may_match(decoded):
            # gunicorn decodes the path Django routes (`/usage%2Fshared%2F...` reaches the
            # share view), but the request line is logged as sent: redact what it means.
            text = decoded
    if not _may_match(text):
        return text  # the common case
    text = _TOKEN.sub(rf"\1_{REDACTED}", text)
    return _SEGMENT.sub(rf"\1{REDACTED}", text)


class RedactingLogger(Logger):
    """gunicorn's logger, its access-log atoms redacted."""

    def atoms(self, resp: Any, req: Any, environ: Any, request_time: Any) -> dict[str, Any]:
        found = super().atoms(resp, req, environ, request_time)
        return {key: redacted(value) if isinstance(value, str) else value
                for key, value in found.items()}
