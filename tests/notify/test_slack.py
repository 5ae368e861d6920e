"""Slack incoming webhook: what each answer means, the message text, and the secret URL."""

from __future__ import annotations

import json
import logging
import re
import traceback
from typing import Callable

import pytest

from clusterwatch.http_client import HttpResponse, TransportError, post
from clusterwatch.loopback.http_recorder import (
    SLACK_PERMANENT_ERRORS,
    HttpRecorder,
    ScriptedResponse,
    SlackResponses,
)
from clusterwatch.notify import channel as ch
from clusterwatch.notify.incident import Action
from clusterwatch.notify.outbox import Outbox, deliver
from clusterwatch.notify.slack import SlackWebhook
from tests.notify.support import (
    CLIENT_TIMEOUT,
    SECRET,
    SECRET_PATH,
    T0,
    CannedPost,
    make_event,
)

PERMANENT = list(SLACK_PERMANENT_ERRORS)
HTTP_DATE = "Wed, 21 Oct 2026 07:28:00 GMT"


def slack_for(server: HttpRecorder, name: str = "slack") -> SlackWebhook:
    return SlackWebhook(name, server.url + SECRET_PATH, timeout=CLIENT_TIMEOUT)


def send_one(server: HttpRecorder, *answers: ScriptedResponse) -> ch.SendResult:
    server.enqueue(*answers)
    return slack_for(server).send([make_event()], T0)


def test_it_delivers_on_200_ok(slack_server: HttpRecorder) -> None:
    result = send_one(slack_server, SlackResponses.ok())

    assert result == ch.SendResult(ch.DELIVERED)
    assert result.ok
    [request] = slack_server.requests
    assert request.method == "POST"
    assert request.path == SECRET_PATH
    assert request.headers["content-type"] == "application/json"


@pytest.mark.parametrize("body", [b"", b"OK", b'{"ok":true}', b"accepted"])
def test_it_keeps_the_batch_on_200_with_another_body(
    slack_server: HttpRecorder, body: bytes
) -> None:
    # Workflow-builder webhooks answer 200 with an empty body: not Slack's acknowledgement.
    result = send_one(slack_server, ScriptedResponse(200, body))

    assert result.outcome == ch.RETRY
    assert not result.ok
    assert result.error is not None and result.error.startswith("http_200")


@pytest.mark.parametrize("status", [500, 502, 503])
def test_it_keeps_the_batch_on_a_server_error(slack_server: HttpRecorder, status: int) -> None:
    result = send_one(slack_server, SlackResponses.server_error(status))

    assert result.outcome == ch.RETRY
    assert result.error is not None and result.error.startswith(f"http_{status}")
    assert result.retry_after is None


def test_it_keeps_the_batch_on_a_timeout(slack_server: HttpRecorder) -> None:
    result = send_one(slack_server, SlackResponses.timeout())

    assert result == ch.SendResult(ch.RETRY, "timeout")
    assert len(slack_server.requests) == 1


def test_it_keeps_the_batch_when_the_connection_is_refused(refused_url: str) -> None:
    result = SlackWebhook("slack", refused_url, timeout=CLIENT_TIMEOUT).send([make_event()], T0)

    assert result == ch.SendResult(ch.RETRY, "connection")


def test_it_defers_by_retry_after_on_429(slack_server: HttpRecorder) -> None:
    result = send_one(slack_server, SlackResponses.rate_limited("30"))

    assert result.outcome == ch.DEFER
    assert result.retry_after == 30.0
    assert result.error == "rate_limited"


@pytest.mark.parametrize("retry_after", [None, "soon", "-5", HTTP_DATE, "", "nan", "inf"])
def test_it_defers_60_s_on_429_without_a_usable_retry_after(
    slack_server: HttpRecorder, retry_after: str | None
) -> None:
    result = send_one(slack_server, SlackResponses.rate_limited(retry_after))

    assert result.outcome == ch.DEFER
    assert result.retry_after == 60.0


@pytest.mark.parametrize(("status", "word"), PERMANENT)
def test_it_rejects_permanently_on_slacks_permanent_errors(
    slack_server: HttpRecorder, status: int, word: str
) -> None:
    result = send_one(slack_server, SlackResponses.permanent(status, word))

    assert result.outcome == ch.REJECTED
    assert result.error == f"http_{status}_{word}"


def test_it_writes_one_line_per_event_in_the_spec_format(slack_server: HttpRecorder) -> None:
    events = [
        make_event(1, T0, "alert", "gpu:192.0.2.10:9100", "stale", "inc-gpu"),
        make_event(2, T0 + 60, "alert", "node:worker.example.org", "missing", "inc-node"),
        make_event(3, T0 + 900, "recover", "gpu:192.0.2.10:9100", "fresh", "inc-gpu"),
    ]

    assert slack_for(slack_server).send(events, T0 + 900).ok

    [request] = slack_server.requests
    payload = request.json()
    lines = payload["text"].split("\n")
    assert len(lines) == 3
    expected = [
        ("2026-10-02 14:16:00Z ALERT gpu:192.0.2.10:9100 (stale)", "inc-gpu"),
        ("2026-10-02 14:17:00Z ALERT node:worker.example.org (missing)", "inc-node"),
        ("2026-10-02 14:31:00Z RECOVER gpu:192.0.2.10:9100 (fresh)", "inc-gpu"),
    ]
    for line, (head, incident) in zip(lines, expected):
        assert line.startswith(head + " ")
        assert re.search(rf"\b{incident}\b", line[len(head):]), line


def test_it_posts_through_the_seam_with_its_timeout() -> None:
    seam = CannedPost([HttpResponse(200, b"ok\n")])
    channel = SlackWebhook("slack", "https://hooks.example" + SECRET_PATH, 7.5, seam)

    assert channel.send([make_event()], T0).ok

    [call] = seam.calls
    assert call.url == "https://hooks.example" + SECRET_PATH
    assert call.timeout == 7.5
    assert call.headers["Content-Type"] == "application/json"
    assert json.loads(call.body) == {"text": make_event().line()}


# The secret URL: whatever happens, it appears in no result, exception, repr or log record.

SCENARIOS: dict[str, ScriptedResponse] = {
    "ok": SlackResponses.ok(),
    "empty_200": ScriptedResponse(200, b""),
    "server_error": SlackResponses.server_error(500),
    "bad_gateway_echoing_the_path": ScriptedResponse(502, f"bad gateway {SECRET_PATH}".encode()),
    "not_found_echoing_the_path": ScriptedResponse(404, f"{SECRET_PATH} not found".encode()),
    "rate_limited": SlackResponses.rate_limited("30"),
    "rate_limited_malformed": SlackResponses.rate_limited("soon"),
    "timeout": SlackResponses.timeout(),
    "redirect": ScriptedResponse(302, b"", {"Location": f"http://127.0.0.1:1{SECRET_PATH}"}),
    **{f"{status}_{word}": SlackResponses.permanent(status, word) for status, word in PERMANENT},
}


def assert_no_secret(text: str) -> None:
    assert SECRET not in text
    assert SECRET_PATH not in text


def assert_logs_hold_no_secret(caplog: pytest.LogCaptureFixture) -> None:
    assert caplog.records, "nothing was logged: the check would be empty"
    assert_no_secret(caplog.text)
    for record in caplog.records:
        assert_no_secret(record.getMessage())
        assert_no_secret(repr(record.args))
        if record.exc_info and record.exc_info[1] is not None:
            assert_no_secret("".join(traceback.format_exception(*record.exc_info)))


def run_through_deliver(
    channel: SlackWebhook, caplog: pytest.LogCaptureFixture
) -> tuple[ch.SendResult, Outbox]:
    outbox = Outbox()
    outbox.attach([channel.name])
    outbox.append(T0, Action.ALERT, "gpu:192.0.2.10:9100", "stale", "inc-1")
    caplog.set_level(logging.DEBUG)
    results = deliver(outbox, [channel], T0)
    return results[channel.name], outbox


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_it_never_reveals_the_webhook_url(
    slack_server: HttpRecorder, caplog: pytest.LogCaptureFixture, scenario: str
) -> None:
    slack_server.enqueue(SCENARIOS[scenario])
    channel = slack_for(slack_server)

    result, outbox = run_through_deliver(channel, caplog)

    assert len(slack_server.requests) == 1  # it did reach the server
    assert_no_secret(repr(result))
    assert_no_secret(str(result.error))
    assert_no_secret(repr(channel))
    assert_no_secret(str(channel))
    assert_no_secret(json.dumps(outbox.to_json()))
    assert_logs_hold_no_secret(caplog)


def test_it_never_reveals_the_webhook_url_when_the_connection_is_refused(
    refused_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    channel = SlackWebhook("slack", refused_url, timeout=CLIENT_TIMEOUT)

    result, outbox = run_through_deliver(channel, caplog)

    assert result.error == "connection"
    assert_no_secret(repr(result))
    assert_no_secret(repr(channel))
    assert_no_secret(json.dumps(outbox.to_json()))
    assert_logs_hold_no_secret(caplog)


def test_it_never_reveals_the_webhook_url_when_the_client_refuses_it(
    slack_server: HttpRecorder, caplog: pytest.LogCaptureFixture
) -> None:
    # A space in the path makes http.client raise InvalidURL quoting the whole URL.
    channel = SlackWebhook("slack", slack_server.url + SECRET_PATH + " x", CLIENT_TIMEOUT)

    result, _ = run_through_deliver(channel, caplog)

    assert result.outcome == ch.RETRY
    assert slack_server.requests == []
    assert_no_secret(repr(result))
    assert_logs_hold_no_secret(caplog)


@pytest.mark.parametrize(
    ("url_of", "kind"),
    [
        (lambda server, refused: server.url + SECRET_PATH, "timeout"),
        (lambda server, refused: refused, "connection"),
        (lambda server, refused: server.url + SECRET_PATH + " x", "bad_url"),
        (lambda server, refused: "ftp://127.0.0.1" + SECRET_PATH, "bad_url"),
        (lambda server, refused: "http://127.0.0.1:99999" + SECRET_PATH, "bad_url"),
    ],
    ids=["timeout", "refused", "invalid_path", "not_http", "bad_port"],
)
def test_it_keeps_the_url_out_of_transport_errors(
    slack_server: HttpRecorder,
    refused_url: str,
    url_of: Callable[[HttpRecorder, str], str],
    kind: str,
) -> None:
    slack_server.enqueue(SlackResponses.timeout())

    with pytest.raises(TransportError) as caught:
        post(url_of(slack_server, refused_url), b"{}", {}, CLIENT_TIMEOUT)

    assert caught.value.kind == kind
    assert_no_secret(str(caught.value))
    assert_no_secret(repr(caught.value))
    assert_no_secret("".join(traceback.format_exception(
        type(caught.value), caught.value, caught.value.__traceback__)))
