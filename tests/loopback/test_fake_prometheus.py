from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Optional

from clusterwatch.loopback.fake_prometheus import (
    EMPTY_VECTOR,
    FakePrometheus,
    error_response,
    vector_response,
)

_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def query(url: str, promql: str, post: bool = False, timeout: float = 5) -> tuple[int, Any]:
    encoded = urllib.parse.urlencode({"query": promql, "time": "1700000000"})
    request: urllib.request.Request
    if post:
        request = urllib.request.Request(url + "/api/v1/query", data=encoded.encode())
    else:
        request = urllib.request.Request(url + "/api/v1/query?" + encoded)
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_vector_response_keeps_the_value_apart_from_the_evaluation_time() -> None:
    labels = {"instance": "192.0.2.10:9100", "file": "/t/gpu_vram.prom"}
    body = json.loads(vector_response([(labels, 1700000000.0, "1699999990.5")]))
    assert body == {
        "status": "success",
        "data": {
            "resultType": "vector",
            "result": [{"metric": labels, "value": [1700000000, "1699999990.5"]}],
        },
    }
    assert "warnings" not in body
    assert json.loads(vector_response([], warnings=["w"]))["warnings"] == ["w"]
    assert json.loads(EMPTY_VECTOR)["data"]["result"] == []


def test_it_answers_get_and_post_and_records_the_parameters() -> None:
    rows = [({"instance": f"10.0.0.{i}:9100"}, 1700000000.123, "1") for i in range(3)]
    with FakePrometheus(vector_response(rows)) as prom:
        status, answer = query(prom.url, 'up{job="node"}')
        assert status == 200
        assert answer["data"]["result"][2]["value"] == [1700000000.123, "1"]
        assert query(prom.url, "up", post=True)[0] == 200
    assert prom.queries == [
        {"query": 'up{job="node"}', "time": "1700000000"},
        {"query": "up", "time": "1700000000"},
    ]
    assert prom.last_query == {"query": "up", "time": "1700000000"}


def test_it_serves_a_changed_answer_status_and_delay() -> None:
    with FakePrometheus() as prom:
        assert query(prom.url, "up")[1]["data"]["result"] == []
        prom.set_response(error_response("parse error"), status=400, delay=0.3)
        started = time.monotonic()
        status, answer = query(prom.url, "up(")
        assert time.monotonic() - started >= 0.3
    assert status == 400
    assert answer == {"status": "error", "errorType": "bad_data", "error": "parse error"}


def test_it_holds_its_answers_until_released() -> None:
    with FakePrometheus() as prom, ThreadPoolExecutor(1) as pool:
        prom.set_response(error_response("busy", "unavailable"), status=503, hold=True)
        held = pool.submit(query, prom.url, "up", timeout=900)
        [request] = prom.wait_held()
        assert request.route == "/api/v1/query" and prom.queries == [
            {"query": "up", "time": "1700000000"}]  # recorded before the hold
        assert not held.done()
        assert prom.release() == 1
        assert held.result(timeout=60) == (503, {"status": "error", "errorType": "unavailable",
                                                 "error": "busy"})


def test_it_serves_a_50000_row_answer_quickly() -> None:
    rows = [({"instance": f"w{i}:9100", "job": "node"}, 1700000000.0, "1.5") for i in range(50_000)]
    body = vector_response(rows)
    with FakePrometheus(body) as prom:
        started = time.monotonic()
        status, answer = query(prom.url, "x")
        elapsed = time.monotonic() - started
    assert status == 200
    assert len(answer["data"]["result"]) == 50_000
    assert elapsed < 5


def test_it_answers_404_elsewhere_and_ready_on_the_readiness_path() -> None:
    with FakePrometheus() as prom:
        with _OPENER.open(prom.url + "/-/ready", timeout=5) as response:
            assert response.status == 200
        status: Optional[int] = None
        try:
            _OPENER.open(prom.url + "/api/v1/series", timeout=5)
        except urllib.error.HTTPError as error:
            status = error.code
    assert status == 404
    assert prom.queries == []
