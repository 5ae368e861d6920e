from __future__ import annotations

import json
import socket
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Optional

import pytest

from clusterwatch.loopback.http_recorder import (
    SLACK_PERMANENT_ERRORS,
    SLACK_WEBHOOK_PATH,
    HttpRecorder,
    ScriptedResponse,
    SlackResponses,
    fake_slack,
)

_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def send(
    url: str, body: Optional[bytes] = b"{}", timeout: float = 5, method: str = "POST"
) -> tuple[int, bytes, dict[str, str]]:
    request = urllib.request.Request(url, data=body, method=method)
    request.add_header("Content-Type", "application/json")
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            return response.status, response.read(), dict(response.headers)
    except urllib.error.HTTPError as error:
        return error.code, error.read(), dict(error.headers)


def test_it_records_method_path_headers_and_body() -> None:
    with HttpRecorder() as recorder:
        status, body, _ = send(recorder.url + "/hook?x=1", b'{"text": "hi"}')
        assert (status, body) == (200, b"ok")
        [request] = recorder.requests
    assert request.method == "POST"
    assert request.path == "/hook?x=1"
    assert request.route == "/hook"
    assert request.query == {"x": ["1"]}
    assert request.headers["content-type"] == "application/json"
    assert request.json() == {"text": "hi"}


def test_it_reads_a_chunked_body() -> None:
    with HttpRecorder() as recorder:
        with socket.create_connection(("127.0.0.1", recorder.port), timeout=5) as conn:
            conn.sendall(
                b"POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"
            )
            assert conn.recv(100).startswith(b"HTTP/1.0 200")
        assert recorder.wait_for()[0].body == b"hello world"


def test_it_plays_the_script_in_order_then_the_default() -> None:
    script = [ScriptedResponse(500, b"first"), ScriptedResponse(201, b"second", {"X-N": "2"})]
    with HttpRecorder(script, default=ScriptedResponse(204, b"")) as recorder:
        assert recorder.pending == 2
        answers = [send(recorder.url) for _ in range(4)]
        assert recorder.pending == 0
        recorder.enqueue(ScriptedResponse(418, b"late"))
        assert send(recorder.url)[:2] == (418, b"late")
    assert [(status, body) for status, body, _ in answers] == [
        (500, b"first"),
        (201, b"second"),
        (204, b""),
        (204, b""),
    ]
    assert answers[1][2]["X-N"] == "2"


def test_it_delays_an_answer() -> None:
    with HttpRecorder([ScriptedResponse(200, b"slow", delay=0.5)]) as recorder:
        started = time.monotonic()
        assert send(recorder.url)[:2] == (200, b"slow")
        assert time.monotonic() - started >= 0.5  # one-sided: a loaded machine only adds


def test_it_delays_only_the_scripted_answer() -> None:
    # The next (unscripted) answer is given while the delayed one is still pending: the
    # order of the two answers shows it, not how fast a loaded machine serves it.
    with HttpRecorder([ScriptedResponse(200, b"slow", delay=600.0)]) as recorder, \
            ThreadPoolExecutor(1) as pool:
        slow = pool.submit(send, recorder.url, timeout=900)
        recorder.wait_for()
        assert send(recorder.url)[:2] == (200, b"ok")
        assert not slow.done()
        recorder.stop()  # drops the delayed answer: the client sees the connection close
        with pytest.raises((ConnectionError, urllib.error.URLError)):
            slow.result(timeout=60)


def test_it_holds_an_answer_until_the_test_releases_it() -> None:
    script = [ScriptedResponse(201, b"held", hold=True)]
    with HttpRecorder(script) as recorder, ThreadPoolExecutor(1) as pool:
        held = pool.submit(send, recorder.url + "/first", timeout=900)
        [request] = recorder.wait_held()
        assert request.path == "/first" and recorder.held == [request]
        assert recorder.requests == [request]  # recorded on arrival, before the hold
        assert send(recorder.url + "/second")[:2] == (200, b"ok")  # others are not held
        assert not held.done()
        assert recorder.release() == 1
        assert held.result(timeout=60)[:2] == (201, b"held")
        assert recorder.held == [] and recorder.release() == 0


def test_it_holds_each_held_answer_again_after_a_release() -> None:
    with fake_slack(default=SlackResponses.held()) as slack, ThreadPoolExecutor(2) as pool:
        first = pool.submit(send, slack.url + "/1", timeout=900)
        slack.wait_held()
        second = pool.submit(send, slack.url + "/2", timeout=900)
        slack.wait_held(2)
        assert slack.release(1) == 1  # the oldest
        assert first.result(timeout=60)[:2] == (200, b"ok")
        assert [r.path for r in slack.held] == ["/2"] and not second.done()
        third = pool.submit(send, slack.url + "/3", timeout=900)
        assert [r.path for r in slack.wait_held(2)] == ["/2", "/3"]
        assert slack.release() == 2
        assert [f.result(timeout=60)[:2] for f in (second, third)] == [(200, b"ok")] * 2


def test_it_drops_held_answers_when_stopped() -> None:
    recorder = HttpRecorder([ScriptedResponse(hold=True)]).start()
    with ThreadPoolExecutor(1) as pool:
        held = pool.submit(send, recorder.url, timeout=900)
        recorder.wait_held()
        recorder.stop()  # no held handler outlives the server: the client sees it close
        with pytest.raises((ConnectionError, urllib.error.URLError)):
            held.result(timeout=60)
    assert recorder.held == []


def test_it_gives_up_waiting_for_a_held_answer_and_says_what_arrived() -> None:
    with HttpRecorder() as recorder:
        send(recorder.url + "/answered")
        with pytest.raises(TimeoutError, match=r"0 of 1 answers held .*POST /answered"):
            recorder.wait_held(timeout=0.2)


def test_it_makes_a_client_time_out_and_still_records_the_request() -> None:
    with fake_slack([SlackResponses.timeout()]) as slack:
        with pytest.raises((socket.timeout, urllib.error.URLError)):  # 3.9: not TimeoutError
            send(slack.url + SLACK_WEBHOOK_PATH, timeout=0.3)
        assert len(slack.requests) == 1
        assert send(slack.url + SLACK_WEBHOOK_PATH)[:2] == (200, b"ok")
        assert len(slack.held) == 1  # never answered: only the client's clock decided
        started = time.monotonic()
    assert time.monotonic() - started < 5  # stopping does not wait for the held answer
    assert slack.held == []


def test_it_waits_for_matching_requests_from_other_threads() -> None:
    with HttpRecorder() as recorder:

        def post_later() -> None:
            time.sleep(0.2)
            send(recorder.url + "/a")
            send(recorder.url + "/b")
            send(recorder.url + "/b")

        thread = threading.Thread(target=post_later)
        thread.start()
        matches = recorder.wait_for(lambda r: r.path == "/b", timeout=10, count=2)
        thread.join()
    assert [r.path for r in matches] == ["/b", "/b"]
    assert [r.path for r in recorder.requests] == ["/a", "/b", "/b"]


def test_it_gives_up_waiting_and_says_what_arrived() -> None:
    with HttpRecorder() as recorder:
        send(recorder.url + "/other")
        with pytest.raises(TimeoutError, match=r"0 of 1 .*POST /other"):
            recorder.wait_for(lambda r: r.path == "/wanted", timeout=0.2)


def test_it_frees_its_port_when_stopped() -> None:
    recorder = HttpRecorder().start()
    port = recorder.port
    assert send(recorder.url)[0] == 200
    recorder.stop()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    with pytest.raises(RuntimeError):
        _ = recorder.url


def test_fake_slack_answers_ok_by_default() -> None:
    with fake_slack() as slack:
        status, body, _ = send(slack.url + SLACK_WEBHOOK_PATH, b'{"text":"x"}')
    assert (status, body) == (200, b"ok")
    assert slack.requests[0].path == SLACK_WEBHOOK_PATH


@pytest.mark.parametrize(
    ("retry_after", "expected_header"), [("30", "30"), (None, None), ("soon", "soon")]
)
def test_slack_rate_limit_carries_retry_after(
    retry_after: Optional[str], expected_header: Optional[str]
) -> None:
    with fake_slack([SlackResponses.rate_limited(retry_after)]) as slack:
        status, body, headers = send(slack.url + SLACK_WEBHOOK_PATH)
    assert status == 429
    assert headers.get("Retry-After") == expected_header
    assert json.loads(body) == {"retry_after": 1, "ok": False, "error": "rate_limited"}


@pytest.mark.parametrize(("status", "error"), SLACK_PERMANENT_ERRORS)
def test_slack_permanent_errors(status: int, error: str) -> None:
    with fake_slack([SlackResponses.permanent(status, error)]) as slack:
        assert send(slack.url + SLACK_WEBHOOK_PATH)[:2] == (status, error.encode())


def test_slack_named_presets() -> None:
    presets = [
        (SlackResponses.server_error(), 500, b"internal_error"),
        (SlackResponses.invalid_payload(), 400, b"invalid_payload"),
        (SlackResponses.invalid_token(), 403, b"invalid_token"),
        (SlackResponses.invalid_token(400), 400, b"invalid_token"),
        (SlackResponses.action_prohibited(), 403, b"action_prohibited"),
        (SlackResponses.no_service(), 404, b"no_service"),
        (SlackResponses.channel_not_found(), 404, b"channel_not_found"),
        (SlackResponses.channel_is_archived(), 410, b"channel_is_archived"),
    ]
    for preset, status, body in presets:
        assert (preset.status, preset.body, preset.delay, preset.hold) == (
            status, body, 0.0, False)
    assert (SlackResponses.timeout().hold, SlackResponses.held().hold) == (True, True)
    assert SlackResponses.timeout(30.0).delay == 30.0
