"""Generic JSON webhook: the payload it posts and what each answer means."""

from __future__ import annotations

import json
import logging

import pytest

from clusterwatch.http_client import HttpResponse, TransportError
from clusterwatch.loopback.http_recorder import HttpRecorder, ScriptedResponse
from clusterwatch.notify import channel as ch
from clusterwatch.notify.incident import Action
from clusterwatch.notify.outbox import Outbox, deliver
from clusterwatch.notify.webhook import JsonWebhook
from tests.notify.support import CLIENT_TIMEOUT, SECRET, T0, CannedPost, make_event

EVENTS = [
    make_event(1, T0, "alert", "node:worker.example.org", "missing", "inc-node"),
    make_event(2, T0 + 600, "recover", "node:worker.example.org", "present", "inc-node"),
]


def hook_for(server: HttpRecorder) -> JsonWebhook:
    return JsonWebhook("hook", f"{server.url}/hooks/ops?token={SECRET}", CLIENT_TIMEOUT)


def answer(status: int, headers: dict[str, str] | None = None) -> ch.SendResult:
    seam = CannedPost([HttpResponse(status, b"", headers or {})])
    return JsonWebhook("hook", "https://hooks.example/x", 5.0, seam).send(EVENTS, T0)


def test_it_posts_version_source_and_one_entry_per_event(recorder: HttpRecorder) -> None:
    assert hook_for(recorder).send(EVENTS, T0 + 600).ok

    [request] = recorder.requests
    assert request.method == "POST"
    assert request.route == "/hooks/ops"
    assert request.query == {"token": [SECRET]}
    assert request.headers["content-type"] == "application/json"
    assert request.json() == {
        "version": 1,
        "source": "clusterwatch",
        "events": [
            {"seq": 1, "t": T0, "action": "alert", "target": "node:worker.example.org",
             "status": "missing", "incident": "inc-node", "text": EVENTS[0].line()},
            {"seq": 2, "t": T0 + 600, "action": "recover", "target": "node:worker.example.org",
             "status": "present", "incident": "inc-node", "text": EVENTS[1].line()},
        ],
    }
    assert request.json()["events"][0]["text"].startswith(
        "2026-10-02 14:16:00Z ALERT node:worker.example.org (missing)")


@pytest.mark.parametrize("status", [200, 201, 202, 204, 299])
def test_it_accepts_any_2xx(status: int) -> None:
    assert answer(status) == ch.SendResult(ch.DELIVERED)


@pytest.mark.parametrize("status", [400, 401, 403, 404, 405, 409, 410, 413, 422, 451, 499])
def test_it_rejects_on_a_4xx(status: int) -> None:
    assert answer(status) == ch.SendResult(ch.REJECTED, f"http_{status}")


@pytest.mark.parametrize("status", [408, 425])
def test_it_retries_on_408_and_425(status: int) -> None:
    assert answer(status) == ch.SendResult(ch.RETRY, f"http_{status}")


@pytest.mark.parametrize(
    ("retry_after", "wait"), [("17", 17.0), (None, 60.0), ("soon", 60.0), ("-5", 60.0)]
)
def test_it_defers_on_429(retry_after: str | None, wait: float) -> None:
    headers = {} if retry_after is None else {"retry-after": retry_after}

    assert answer(429, headers) == ch.SendResult(ch.DEFER, "http_429", wait)


def test_it_defers_on_503_with_retry_after() -> None:
    assert answer(503, {"retry-after": "120"}) == ch.SendResult(ch.DEFER, "http_503", 120.0)


@pytest.mark.parametrize("status", [500, 502, 503, 504])
def test_it_retries_on_5xx_without_retry_after(status: int) -> None:
    assert answer(status) == ch.SendResult(ch.RETRY, f"http_{status}")


@pytest.mark.parametrize("kind", ["timeout", "connection", "tls", "bad_url"])
def test_it_retries_on_transport_errors(kind: str) -> None:
    seam = CannedPost([TransportError(kind, "detail")])

    result = JsonWebhook("hook", "https://hooks.example/x", 5.0, seam).send(EVENTS, T0)

    assert result == ch.SendResult(ch.RETRY, kind)


def test_it_reads_retry_after_from_a_real_503(recorder: HttpRecorder) -> None:
    recorder.enqueue(ScriptedResponse(503, b"busy", {"Retry-After": "40"}))

    assert hook_for(recorder).send(EVENTS, T0) == ch.SendResult(ch.DEFER, "http_503", 40.0)


def test_it_retries_on_a_real_timeout(recorder: HttpRecorder) -> None:
    recorder.enqueue(ScriptedResponse(200, b"", hold=True))  # never answered while it waits

    assert hook_for(recorder).send(EVENTS, T0) == ch.SendResult(ch.RETRY, "timeout")


def test_it_retries_when_the_connection_is_refused(refused_url: str) -> None:
    channel = JsonWebhook("hook", refused_url, CLIENT_TIMEOUT)

    assert channel.send(EVENTS, T0) == ch.SendResult(ch.RETRY, "connection")


@pytest.mark.parametrize("status", [200, 404, 429, 500])
def test_it_never_reveals_the_url_token(
    recorder: HttpRecorder, caplog: pytest.LogCaptureFixture, status: int
) -> None:
    recorder.enqueue(ScriptedResponse(status, f"echo {SECRET}".encode()))
    channel = hook_for(recorder)
    outbox = Outbox()
    outbox.attach(["hook"])
    outbox.append(T0, Action.ALERT, "node:worker.example.org", "missing", "inc-node")
    caplog.set_level(logging.DEBUG)

    result = deliver(outbox, [channel], T0)["hook"]

    assert len(recorder.requests) == 1
    assert caplog.records
    for text in (repr(result), repr(channel), caplog.text, json.dumps(outbox.to_json())):
        assert SECRET not in text
