"""The one seam for outbound HTTP: every channel posts through `HttpPost`.

Errors never carry the URL: webhook URLs are secrets, and urllib's exceptions can quote them.
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Callable, NamedTuple, Optional

from clusterwatch.http_deadline import (
    Deadline,
    DeadlineHTTPConnection,
    DeadlineHTTPSConnection,
)

USER_AGENT = "clusterwatch-notify/1"
MAX_BODY = 64 * 1024  # answers we read are short status words or JSON errors


@dataclass(frozen=True)
class HttpResponse:
    status: int
    body: bytes = b""
    headers: Mapping[str, str] = field(default_factory=dict)  # keys lower-cased

    def text(self) -> str:
        return self.body.decode("utf-8", "replace").strip()


class TransportError(Exception):
    """No HTTP answer came back. `kind` is a short word safe to log and export."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail


HttpPost = Callable[[str, bytes, Mapping[str, str], float], HttpResponse]


def request(
    method: str,
    url: str,
    body: Optional[bytes] = None,
    headers: Optional[Mapping[str, str]] = None,
    timeout: float = 10.0,
    max_body: int = MAX_BODY,
) -> HttpResponse:
    """One HTTP request with the stdlib client; raise TransportError when no answer came.

    A body longer than `max_body` raises TransportError("too_large"): better than acting on
    a truncated document.
    """
    target = _split(url)
    path = target.path or "/"
    if target.query:
        path += "?" + target.query
    all_headers = {"User-Agent": USER_AGENT, **(headers or {})}
    if body is not None:
        all_headers["Content-Length"] = str(len(body))
    deadline = Deadline(timeout)  # for the whole exchange, connecting included
    connection_class = (
        DeadlineHTTPSConnection if target.scheme == "https" else DeadlineHTTPConnection
    )
    # An explicit port: left to http.client, an IPv6 host such as ::1 would be split at
    # its last colon into host and port.
    port = target.port or (443 if target.scheme == "https" else 80)
    connection = connection_class(target.hostname, port, deadline)
    try:
        connection.request(method, path, body=body, headers=all_headers)
        response = connection.getresponse()
        data = response.read(max_body + 1)
        if len(data) > max_body:
            raise TransportError("too_large", f"answer longer than {max_body} bytes")
        return HttpResponse(
            status=response.status,
            body=data,
            headers={k.lower(): v for k, v in response.getheaders()},
        )
    except socket.timeout:
        raise TransportError("timeout", f"no answer within {timeout:g} s") from None
    except ssl.SSLError as exc:
        raise TransportError("tls", type(exc).__name__) from None
    except (OSError, http.client.HTTPException, ValueError) as exc:
        raise TransportError("connection", type(exc).__name__) from None
    finally:
        connection.close()


class _Target(NamedTuple):
    scheme: str
    hostname: str
    port: Optional[int]
    path: str
    query: str


def url_problem(url: str) -> Optional[str]:
    """Why `url` cannot be requested, or None. The reason never quotes the URL (a secret)."""
    try:
        _split(url)
    except TransportError as exc:
        return exc.detail
    return None


def _split(url: str) -> _Target:
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError:
        # An out-of-range or non-numeric port, a broken IPv6 literal.
        raise TransportError("bad_url", "the URL has an invalid host or port") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise TransportError("bad_url", "the URL is not an http(s) URL with a host")
    if port == 0:
        raise TransportError("bad_url", "the URL has an invalid host or port")
    if any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in url):
        raise TransportError("bad_url", "the URL holds spaces or control characters")
    return _Target(parts.scheme, parts.hostname, port, parts.path, parts.query)


def post(url: str, body: bytes, headers: Mapping[str, str], timeout: float) -> HttpResponse:
    return request("POST", url, body, headers, timeout)


def post_json(
    send: HttpPost, url: str, payload: object, timeout: float
) -> HttpResponse:
    body = json.dumps(payload, separators=(",", ":")).encode()
    return send(url, body, {"Content-Type": "application/json"}, timeout)
