"""How a read through the NERSC IRI API fails: one `IriError` with a short `kind`.

The message is one line, fit for a record's error field, a log and a terminal. It gives the
HTTP status where there was one and the API's own short reason, and never the token, nor a
URL: the API's problem documents (RFC 9457) carry the request's full URL in `instance`, and a
careless proxy may quote the Authorization header back, so what the server says is scrubbed
before it is repeated.
"""

from __future__ import annotations

import json
import re
from typing import Optional

from clusterwatch.http_client import TransportError

KINDS = ("unauthorized", "unavailable", "refused", "timeout", "too_large", "failed",
         "canceled", "garbage", "down")
REASON_CHARS = 200  # the API's detail for a 500 is one sentence; a page of HTML is not a reason

_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://\S*")
_BLANKS = re.compile(r"[\s\x00-\x1f\x7f]+")


class IriError(Exception):
    """No file came back. `kind` is one of KINDS; `status` the HTTP status, if any."""

    def __init__(self, kind: str, message: str, status: Optional[int] = None) -> None:
        assert kind in KINDS, kind
        super().__init__(message)
        self.kind = kind
        self.status = status


def clean(text: str, token: str, limit: int = REASON_CHARS) -> str:
    """`text` as one short line without the token or any URL in it."""
    if token:
        text = text.replace(token, "[token]")
    text = _URL.sub("[url]", text)
    text = _BLANKS.sub(" ", text).strip()
    return text if len(text) <= limit else text[:limit - 3].rstrip() + "..."


def from_answer(status: int, body: bytes, step: str, token: str) -> IriError:
    """The error for an HTTP answer other than 200 to `step` ("the view request")."""
    reason = _reason(body, token)
    said = f": {reason}" if reason else ""
    if status in (401, 403):
        # 401: no valid token; 403: "Authentication succeeded but no user ID was identified".
        return IriError("unauthorized",
                        f"IRI API refused the token (HTTP {status} to {step}){said}", status)
    if status >= 500:
        # NERSC's facility endpoints answered 500 for more than 15 hours in 2026-09 while
        # account/* worked: an outage is a 500, not only a 502-504 from a proxy.
        return IriError("unavailable", f"IRI API unavailable (HTTP {status} to {step}){said}",
                        status)
    if 300 <= status < 400:
        # Never followed: the token would go to wherever the Location header points.
        return IriError("refused",
                        f"IRI API redirected {step} (HTTP {status}); redirects are not "
                        "followed, set the API's URL itself", status)
    return IriError("refused", f"IRI API refused {step} (HTTP {status}){said}", status)


def from_transport(exc: TransportError, step: str, timeout_s: float) -> IriError:
    """The error for a request to `step` that got no HTTP answer."""
    if exc.kind == "timeout":
        return IriError("timeout", f"IRI API gave no answer to {step} within {timeout_s:g} s")
    if exc.kind == "too_large":
        return IriError("too_large", f"IRI API's answer to {step} is too long ({exc.detail})")
    return IriError("down", f"IRI API cannot be reached ({exc.kind}: {exc.detail})")


def _reason(body: bytes, token: str) -> str:
    """The API's `detail` (else `title`) from a problem document; nothing from other bodies."""
    try:
        document = json.loads(body)
    except (ValueError, RecursionError):  # a body nested past the stack is no reason either
        return ""
    if not isinstance(document, dict):
        return ""
    for key in ("detail", "title"):
        value = document.get(key)
        if isinstance(value, str) and value.strip():
            return clean(value, token)
    return ""
