"""Every channel's request has one deadline for the whole exchange, not one per read.

A server that answers one byte at a time never lets a single read wait as long as the
timeout; only a deadline over the whole exchange stops the client in time.
"""

from __future__ import annotations

import ssl
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Callable

import pytest

from clusterwatch import http_deadline as deadline
from clusterwatch.http_client import TransportError, request
from clusterwatch.loopback.dripping_server import DrippingServer
from clusterwatch.notify import channel as ch
from clusterwatch.notify.alertmanager import AlertmanagerChannel
from clusterwatch.notify.channel import Channel
from clusterwatch.notify.slack import SlackWebhook
from clusterwatch.notify.webhook import JsonWebhook
from tests.notify.support import SECRET, SECRET_PATH, T0, make_event

TIMEOUT = 0.5  # seconds for the whole exchange
DRIP_S = 0.1  # one byte every 0.1 s: each read waits far less than TIMEOUT
# Scheduling slack on a loaded machine, one-sided: a deadline for the failure message. The
# bound still tells the channel's deadline from a per-read timeout, which lets the answer drip
# for 8 s (or to its end: not a timeout at all).
MARGIN = 2.0


@pytest.fixture
def dripping() -> Iterator[DrippingServer]:
    # About 80 bytes: 8 s to drip it whole, 16 times the timeout.
    with DrippingServer(body=b"ok", headers={"Content-Type": "text/plain"},
                        interval=DRIP_S) as server:
        yield server


CHANNELS: dict[str, Callable[[str], Channel]] = {
    "slack": lambda base: SlackWebhook("slack", base + SECRET_PATH, TIMEOUT),
    "webhook": lambda base: JsonWebhook("hook", base + SECRET_PATH, TIMEOUT),
    "alertmanager": lambda base: AlertmanagerChannel("am", base, TIMEOUT),
}


@pytest.mark.parametrize("kind", sorted(CHANNELS))
def test_it_gives_up_on_a_dripping_server_at_the_channel_timeout(
    dripping: DrippingServer, kind: str
) -> None:
    channel = CHANNELS[kind](dripping.url)
    started = time.monotonic()
    result = channel.send([make_event()], T0)
    elapsed = time.monotonic() - started
    assert dripping.requests == 1
    assert result == ch.SendResult(ch.RETRY, "timeout")
    assert elapsed < TIMEOUT + MARGIN, f"{kind} waited {elapsed:.1f} s for a {TIMEOUT} s timeout"


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_it_bounds_the_whole_exchange_of_a_request(dripping: DrippingServer,
                                                   method: str) -> None:
    started = time.monotonic()
    with pytest.raises(TransportError) as info:
        request(method, dripping.url + SECRET_PATH, b"x" if method == "POST" else None,
                timeout=TIMEOUT)
    elapsed = time.monotonic() - started
    assert info.value.kind == "timeout"
    assert SECRET not in str(info.value)
    assert elapsed < TIMEOUT + MARGIN


def test_it_still_reads_a_prompt_answer_whole() -> None:
    body = b"x" * 300_000  # many reads, each well within the deadline
    with DrippingServer(body=body, interval=0.0) as server:
        response = request("GET", server.url, timeout=5.0, max_body=len(body))
    assert (response.status, response.body) == (200, body)


# --- HTTPS: the TLS socket keeps the deadline too ----------------------------------------------

@pytest.fixture
def certificate(tmp_path: Path, need_binary: Callable[[str], str]) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1: (certificate, key)."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run([need_binary("openssl"), "req", "-x509", "-newkey", "rsa:2048", "-nodes",
                    "-keyout", str(key), "-out", str(cert), "-days", "1",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True, timeout=60)
    return cert, key


def server_tls(certificate: tuple[Path, Path]) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*certificate)
    return context


@pytest.fixture
def trusting(certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """The client trusts the test certificate (and verifies it as it verifies any other)."""
    context = deadline.new_tls_context()
    context.load_verify_locations(certificate[0])
    monkeypatch.setattr(deadline, "_tls_context", lambda: context)


@pytest.mark.usefixtures("trusting")
def test_it_reads_a_prompt_https_answer(certificate: tuple[Path, Path]) -> None:
    with DrippingServer(body=b"ok", interval=0.0, tls=server_tls(certificate)) as server:
        response = request("POST", server.url + SECRET_PATH, b"{}", timeout=5.0)
    assert (response.status, response.body) == (200, b"ok")


@pytest.mark.usefixtures("trusting")
def test_it_gives_up_on_a_dripping_https_server_at_the_timeout(
    certificate: tuple[Path, Path],
) -> None:
    with DrippingServer(body=b"ok", interval=DRIP_S, tls=server_tls(certificate)) as server:
        started = time.monotonic()
        result = SlackWebhook("slack", server.url + SECRET_PATH, TIMEOUT).send(
            [make_event()], T0)
        elapsed = time.monotonic() - started
    assert result == ch.SendResult(ch.RETRY, "timeout")
    assert elapsed < TIMEOUT + MARGIN


def test_it_refuses_a_certificate_it_does_not_trust(certificate: tuple[Path, Path]) -> None:
    with DrippingServer(body=b"ok", interval=0.0, tls=server_tls(certificate)) as server, \
            pytest.raises(TransportError) as info:
        request("GET", server.url + SECRET_PATH, timeout=5.0)
    assert info.value.kind == "tls" and SECRET not in str(info.value)
