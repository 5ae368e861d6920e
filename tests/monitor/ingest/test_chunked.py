"""Chunked request bodies (`Transfer-Encoding: chunked`, no Content-Length) under gunicorn:
stored like any other within the limit, 413 beyond it, 400 when the chunking is broken."""

from __future__ import annotations

import json

import pytest

from clusterwatch.loopback.monitor_server import MonitorServer
from tests.monitor.served_support import (
    SHARED_RECORD_LIMIT,
    exchange,
    latest,
    now,
    post,
    record_body,
    token_for,
)

pytestmark = pytest.mark.integration

LIMIT = SHARED_RECORD_LIMIT  # CLUSTERWATCH_MAX_RECORD_BYTES; the example record is about 9 KB


@pytest.fixture
def server(served_monitor: MonitorServer) -> MonitorServer:
    return served_monitor  # the session's (tests/monitor/ingest/conftest.py), with LIMIT


def test_it_stores_a_chunked_record_like_any_other(server: MonitorServer) -> None:
    token = token_for(server, "chunked01")
    body = record_body("chunked01", now())
    answer = post(server, "chunked01", token, body, chunk_bytes=1000)
    assert answer.status == 201, answer.body
    assert answer.json()["size_bytes"] == len(body)
    stored = latest(server, "chunked01", token)
    assert stored.status == 200 and stored.json()["record"] == json.loads(body)
    again = post(server, "chunked01", token, body, chunk_bytes=777)
    assert again.status == 200 and again.json()["duplicate"] is True


def test_it_refuses_a_chunked_body_over_the_limit_with_413(server: MonitorServer) -> None:
    token = token_for(server, "chunked02")
    padded = record_body("chunked02", now(), padding="x" * LIMIT)
    answer = post(server, "chunked02", token, padded, chunk_bytes=8192)
    assert answer.status == 413, answer.body
    assert answer.json()["error"] == "too_large"
    assert str(LIMIT) in answer.json()["detail"]
    assert latest(server, "chunked02", token).status == 404  # nothing stored


def test_it_refuses_an_empty_chunked_body_with_400(server: MonitorServer) -> None:
    token = token_for(server, "chunked03")
    answer = post(server, "chunked03", token, b"", chunk_bytes=1000)
    assert answer.status == 400 and answer.json()["error"] == "json"


def test_it_refuses_broken_chunking_with_a_4xx_never_a_500(server: MonitorServer) -> None:
    token = token_for(server, "chunked04")
    body = record_body("chunked04", now())
    head = (f"POST /api/host-reports/chunked04/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Authorization: Token {token}\r\nContent-Type: application/json\r\n"
            "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n").encode()
    # The first chunk's size says 0x10 bytes, then far more come before the CRLF.
    broken = b"10\r\n" + body[:100] + b"\r\n0\r\n\r\n"
    status, answer = exchange(server.port, head + broken)
    assert 400 <= status < 500, answer[:300]
    assert latest(server, "chunked04", token).status == 404
