"""The delivery pass over verified HTTPS to a loopback monitor (the buffer: test_buffer.py)."""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Optional

import pytest

from clusterwatch.reporter.buffer import Buffer
from clusterwatch.reporter.delivery import deliver
from clusterwatch.reporter.envfile import ConfigError
from tests.reporter.drip import DripRelay, DripServer
from tests.support.tls import CA, MonitorServer

from .delivery_support import TOKEN, Clock, run_once, seqs


@pytest.fixture
def monitor(pki: dict[str, Any]) -> Iterator[MonitorServer]:
    with MonitorServer(pki["server"]) as server:
        yield server.start()


def ca_of(pki: dict[str, Any]) -> str:
    ca: CA = pki["ca"]
    return str(ca.cert)


# -- delivery ------------------------------------------------------------------------------


def test_it_delivers_a_record_with_the_token_in_the_header(
        buffer: Buffer, clock: Clock, monitor: MonitorServer, pki: dict[str, Any]) -> None:
    outcome = run_once(buffer, clock, 0, monitor.url, ca_of(pki))

    assert outcome == {
        "delivered_all": True, "delivered": 1, "set_aside": 0, "backlog": 0,
        "last_error": None,
        "section": {"backlog": 0, "oldest_at": None, "dropped": 0, "set_aside": 0,
                    "reasons": {}, "last_error": None, "last_error_at": None},
    }
    [post] = monitor.posts
    assert post.path == "/api/reporter/records"
    assert post.headers["Authorization"] == f"Bearer {TOKEN}"
    assert post.headers["Content-Type"] == "application/json"
    assert post.headers["User-Agent"].startswith("clusterwatch-harvester-reporter/")
    assert json.loads(post.body) == {"seq": 0, "delivery": {
        "backlog": 0, "oldest_at": None, "dropped": 0, "set_aside": 0, "reasons": {},
        "last_error": None, "last_error_at": None}}
    assert buffer.names() == []


def test_it_buffers_while_the_monitor_is_down_and_delivers_everything_in_order_later(
        buffer: Buffer, clock: Clock, pki: dict[str, Any]) -> None:
    with MonitorServer(pki["server"]) as server:  # bound, not listening: refused
        for seq in range(6):
            outcome = run_once(buffer, clock, seq, server.url, ca_of(pki))
            assert outcome["delivered_all"] is False
            assert outcome["backlog"] == seq + 1
            assert outcome["last_error"].startswith("connection: ")
        section = buffer.section()
        assert section["backlog"] == 6
        assert section["oldest_at"] == "2026-09-21T14:18:20Z"
        assert section["last_error"] == outcome["last_error"]
        assert section["last_error_at"] == "2026-09-21T14:43:20Z"

        server.start()
        outcome = run_once(buffer, clock, 6, server.url, ca_of(pki))

    assert outcome["delivered_all"] is True
    assert outcome["delivered"] == 7
    assert seqs(server) == [0, 1, 2, 3, 4, 5, 6]
    delivered = [json.loads(post.body)["delivery"] for post in server.posts]
    assert [d["backlog"] for d in delivered] == [0, 1, 2, 3, 4, 5, 6]
    assert delivered[0]["last_error"] is None
    assert delivered[6]["last_error"].startswith("connection: ")  # why the gap, told late
    assert buffer.names() == []
    assert buffer.section()["last_error"] is None


@pytest.mark.parametrize("status", [413, 400, 422, 409])
def test_it_sets_a_rejected_record_aside_and_goes_on(
        buffer: Buffer, clock: Clock, pki: dict[str, Any], status: int) -> None:
    with MonitorServer(pki["server"], script=[200, status, 200]) as server:
        for seq in range(3):
            buffer.add({"seq": seq, "delivery": buffer.section()})
        outcome = deliver(buffer, server.start().url, TOKEN, ca_bundle=ca_of(pki), now=clock)

    assert seqs(server) == [0, 1, 2]
    assert outcome["delivered"] == 2
    assert outcome["set_aside"] == 1
    assert outcome["backlog"] == 0
    assert outcome["delivered_all"] is False  # this pass lost a record: exit 1
    assert outcome["last_error"].startswith(f"http: HTTP {status} ")
    assert outcome["section"]["set_aside"] == 1
    assert outcome["section"]["reasons"] == {f"set aside: HTTP {status}": 1}
    aside = sorted(os.listdir(Path(buffer.state_dir) / "set_aside"))
    assert len(aside) == 2
    assert json.loads((Path(buffer.state_dir) / "set_aside" / aside[0]).read_text())["seq"] == 1
    assert (Path(buffer.state_dir) / "set_aside" / aside[1]).read_text().startswith(
        f"set aside: HTTP {status}\nhttp: HTTP {status} ")


def test_it_sets_aside_413_and_400_while_later_records_still_go_and_reports_them_once(
        buffer: Buffer, clock: Clock, pki: dict[str, Any]) -> None:
    def script(body: bytes) -> int:
        return {1: 413, 3: 400}.get(json.loads(body)["seq"], 200)

    with MonitorServer(pki["server"]) as server:
        for seq in range(5):  # the monitor is down for five runs
            run_once(buffer, clock, seq, server.url, ca_of(pki))
        server.script = script
        server.start()
        first = run_once(buffer, clock, 5, server.url, ca_of(pki))
        second = run_once(buffer, clock, 6, server.url, ca_of(pki))

    assert first["delivered"] == 4
    assert first["set_aside"] == 2
    assert first["backlog"] == 0
    assert first["section"]["set_aside"] == 2
    assert first["section"]["reasons"] == {"set aside: HTTP 413": 1, "set aside: HTTP 400": 1}
    assert second["delivered_all"] is True
    assert seqs(server) == [0, 1, 2, 3, 4, 5, 6]
    reported = json.loads(server.posts[-1].body)["delivery"]
    assert reported["set_aside"] == 2
    assert reported["reasons"] == {"set aside: HTTP 413": 1, "set aside: HTTP 400": 1}
    assert second["section"]["set_aside"] == 0  # reset once the record reporting it went
    assert second["section"]["reasons"] == {}


@pytest.mark.parametrize("status", [500, 502, 503, 408, 429, 401, 403, 404])
def test_it_stops_the_pass_on_a_transient_answer_and_keeps_the_rest(
        buffer: Buffer, clock: Clock, pki: dict[str, Any], status: int) -> None:
    with MonitorServer(pki["server"], script=[200, status]) as server:
        for seq in range(3):
            buffer.add({"seq": seq})
        outcome = deliver(buffer, server.start().url, TOKEN, ca_bundle=ca_of(pki), now=clock)

    assert seqs(server) == [0, 1]
    assert outcome["delivered"] == 1
    assert outcome["set_aside"] == 0
    assert outcome["backlog"] == 2
    assert outcome["delivered_all"] is False
    assert outcome["last_error"].startswith(f"http: HTTP {status} ")
    assert [json.loads(buffer.read(name))["seq"] for name in buffer.names()] == [1, 2]
    assert os.listdir(Path(buffer.state_dir) / "set_aside") == []


def test_it_does_not_follow_a_redirect_with_the_token(
        buffer: Buffer, clock: Clock, pki: dict[str, Any]) -> None:
    with MonitorServer(pki["server"], script=[302]) as server:
        buffer.add({"seq": 0})
        outcome = deliver(buffer, server.start().url, TOKEN, ca_bundle=ca_of(pki), now=clock)

    assert len(server.posts) == 1
    assert outcome["backlog"] == 1
    assert "redirects are not followed" in outcome["last_error"]


def test_it_refuses_a_server_certificate_from_another_ca_and_buffers(
        buffer: Buffer, clock: Clock, pki: dict[str, Any]) -> None:
    with MonitorServer(pki["impostor"]) as server:
        server.start()
        outcome = run_once(buffer, clock, 0, server.url, ca_of(pki))

    assert server.posts == []
    assert outcome["delivered_all"] is False
    assert outcome["backlog"] == 1
    assert outcome["last_error"].startswith("tls: ")
    assert "CERTIFICATE_VERIFY_FAILED" in outcome["last_error"]
    assert buffer.section()["last_error"] == outcome["last_error"]


def test_it_verifies_against_the_system_cas_without_a_bundle(
        buffer: Buffer, clock: Clock, monitor: MonitorServer) -> None:
    buffer.add({"seq": 0})
    outcome = deliver(buffer, monitor.url, TOKEN, now=clock)

    assert monitor.posts == []
    assert "CERTIFICATE_VERIFY_FAILED" in outcome["last_error"]
    assert outcome["backlog"] == 1


def test_it_keeps_the_records_when_the_ca_bundle_cannot_be_read(
        buffer: Buffer, clock: Clock, monitor: MonitorServer, tmp_path: Path) -> None:
    buffer.add({"seq": 0})
    missing = str(tmp_path / "no-such-ca.pem")
    outcome = deliver(buffer, monitor.url, TOKEN, ca_bundle=missing, now=clock)

    assert monitor.posts == []
    assert outcome["last_error"].startswith(f"tls: cannot load CA bundle {missing}: ")
    assert outcome["backlog"] == 1


def test_it_gives_up_on_a_silent_monitor_after_the_timeout(
        buffer: Buffer, clock: Clock, pki: dict[str, Any]) -> None:
    with MonitorServer(pki["server"], hold=True) as server:  # never answers: 0.3 s decides
        buffer.add({"seq": 0})
        outcome = deliver(buffer, server.start().url, TOKEN, ca_bundle=ca_of(pki),
                          timeout=0.3, now=clock)

    assert outcome["last_error"] == "timeout: no complete answer within 0.3 s"
    assert outcome["backlog"] == 1


# A peer that sends one byte a second satisfies every per-read timeout; the deadline covers
# the whole exchange (connect, TLS, send, the answer), so the pass stops in time all the same.
DEADLINE_S = 2.0
SLACK_S = 2.0  # thread scheduling on a loaded test machine


def timed_deliver(buffer: Buffer, clock: Clock, url: str,
                  ca_bundle: Optional[str] = None) -> tuple[dict[str, Any], float]:
    buffer.add({"seq": 0})
    started = time.monotonic()
    outcome = deliver(buffer, url, TOKEN, ca_bundle=ca_bundle, timeout=DEADLINE_S, now=clock)
    return outcome, time.monotonic() - started


def test_it_gives_up_on_an_answer_that_drips_in_at_the_deadline(
        buffer: Buffer, clock: Clock) -> None:
    with DripServer(interval=1.0) as server:
        outcome, took = timed_deliver(buffer, clock, server.url)
    assert server.connections == 1
    assert took < DEADLINE_S + SLACK_S, f"the exchange went on for {took:.1f} s"
    assert outcome["last_error"] == f"timeout: no complete answer within {DEADLINE_S:g} s"
    assert outcome["backlog"] == 1  # kept for the next run


def test_it_gives_up_on_a_tls_answer_that_drips_in_at_the_deadline(
        buffer: Buffer, clock: Clock, pki: dict[str, Any]) -> None:
    with DripServer(interval=1.0, cert=pki["server"]) as server:
        outcome, took = timed_deliver(buffer, clock, server.url, ca_of(pki))
    assert server.connections == 1
    assert took < DEADLINE_S + SLACK_S, f"the exchange went on for {took:.1f} s"
    assert outcome["last_error"] == f"timeout: no complete answer within {DEADLINE_S:g} s"
    assert outcome["backlog"] == 1


def test_it_gives_up_on_a_tls_handshake_that_drips_in_at_the_deadline(
        buffer: Buffer, clock: Clock, pki: dict[str, Any]) -> None:
    with MonitorServer(pki["server"]) as monitor:
        monitor.start()
        with DripRelay(("127.0.0.1", monitor.port), interval=1.0) as relay:
            outcome, took = timed_deliver(buffer, clock, relay.url(), ca_of(pki))
    assert took < DEADLINE_S + SLACK_S, f"the exchange went on for {took:.1f} s"
    assert outcome["last_error"] == f"timeout: no complete answer within {DEADLINE_S:g} s"
    assert monitor.posts == [] and outcome["backlog"] == 1


def test_it_allows_plain_http_to_loopback_only(buffer: Buffer, clock: Clock) -> None:
    with MonitorServer(None) as server:
        buffer.add({"seq": 0})
        assert deliver(buffer, server.start().url, TOKEN, now=clock)["delivered_all"] is True
        assert seqs(server) == [0]

    buffer.add({"seq": 1})
    with pytest.raises(ConfigError, match="must be https"):
        deliver(buffer, "http://monitor.example.org/ingest", TOKEN, now=clock)
    assert len(buffer.names()) == 1


def test_it_never_puts_the_token_in_logs_errors_or_files(
        buffer: Buffer, clock: Clock, pki: dict[str, Any],
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    with MonitorServer(pki["server"], script=[400, 500], echo_auth=True) as server:
        buffer.add({"seq": 0})
        buffer.add({"seq": 1})
        outcome = deliver(buffer, server.start().url, TOKEN, ca_bundle=ca_of(pki), now=clock)
    with MonitorServer(pki["impostor"]) as server:
        tls_outcome = deliver(buffer, server.start().url, TOKEN, ca_bundle=ca_of(pki),
                              now=clock)
    with pytest.raises(ConfigError) as caught:
        deliver(buffer, "https://monitor.example.org/x", TOKEN + " with space", now=clock)

    assert "you sent: Bearer <token>" in outcome["last_error"]  # the echo, scrubbed
    assert "you sent: Bearer <token>" in caplog.text
    assert TOKEN not in caplog.text
    assert TOKEN not in json.dumps([outcome, tls_outcome])
    assert TOKEN not in str(caught.value)
    for path in Path(buffer.state_dir).rglob("*"):
        if path.is_file():
            assert TOKEN not in path.read_text(errors="replace"), path


def test_it_sets_aside_an_unreadable_record_file_without_posting_it(
        buffer: Buffer, clock: Clock) -> None:
    posted: list[bytes] = []

    def poster(data: bytes) -> tuple[Optional[int], str]:
        posted.append(data)
        return 200, "HTTP 200"

    buffer.add({"seq": 0})
    bad = buffer.add({"seq": 1})
    buffer.add({"seq": 2})
    Path(buffer.dir, bad).write_bytes(b'{"seq": 1, "trunc')
    outcome = deliver(buffer, "https://monitor.example.org/x", TOKEN, poster=poster,
                      now=clock)

    assert [json.loads(data)["seq"] for data in posted] == [0, 2]
    assert outcome["set_aside"] == 1
    assert outcome["section"]["reasons"] == {"set aside: unreadable record": 1}
    assert (Path(buffer.set_aside_dir) / bad).exists()
