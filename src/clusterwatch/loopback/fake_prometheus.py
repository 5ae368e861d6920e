"""A loopback stand-in for Prometheus' instant-query API, with canned answers.

The answer is a prebuilt byte string served as is, so a 50,000-row vector costs one socket
write per request. Every query's parameters are recorded.
"""

from __future__ import annotations

import json
import math
import threading
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any, Optional

from clusterwatch.loopback.http_recorder import (
    LoopbackHTTPServer,
    RecordedRequest,
    ScriptedResponse,
)

QUERY_PATH = "/api/v1/query"
_JSON = {"Content-Type": "application/json"}

Row = tuple[Mapping[str, str], float, str]  # (labels, evaluation timestamp, value string)


def vector_response(rows: Sequence[Row], warnings: Sequence[str] = ()) -> bytes:
    """A successful instant-vector answer, one result per (labels, eval_time, value) row.

    As in the real API the pair is [evaluation time, "value"]: the sample's value is a
    string and the number beside it is the query's time, not the sample's.
    """
    answer: dict[str, Any] = {
        "status": "success",
        "data": {
            "resultType": "vector",
            "result": [
                {"metric": dict(labels), "value": [_api_time(at), value]}
                for labels, at, value in rows
            ],
        },
    }
    if warnings:
        answer["warnings"] = list(warnings)
    return json.dumps(answer, separators=(",", ":")).encode()


def error_response(error: str, error_type: str = "bad_data") -> bytes:
    """An error answer as Prometheus sends it (with HTTP 400, 422, 503 ...)."""
    body = {"status": "error", "errorType": error_type, "error": error}
    return json.dumps(body, separators=(",", ":")).encode()


EMPTY_VECTOR = vector_response([])


class FakePrometheus(LoopbackHTTPServer):
    """Answers GET and POST /api/v1/query with the body set last; /-/ready says 200.

    Use as a context manager; `queries` lists each query's parameters (query string and
    form body merged; the last value wins). With `hold`, each query's answer waits for
    `release()` (`wait_held()` sees it waiting); stopping the server drops held answers.
    """

    def __init__(self, body: bytes = EMPTY_VECTOR, status: int = 200, delay: float = 0.0,
                 hold: bool = False) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._queries: list[dict[str, str]] = []
        self._response = ScriptedResponse(status, body, _JSON, delay, hold)

    def set_response(self, body: bytes, status: int = 200, delay: float = 0.0,
                     hold: bool = False) -> None:
        """Answer later queries with `body` (e.g. from vector_response), after `delay` s,
        and with `hold` only once the test calls `release()`."""
        with self._lock:
            self._response = ScriptedResponse(status, body, _JSON, delay, hold)

    @property
    def queries(self) -> list[dict[str, str]]:
        with self._lock:
            return list(self._queries)

    @property
    def last_query(self) -> Optional[dict[str, str]]:
        with self._lock:
            return self._queries[-1] if self._queries else None

    def respond(self, request: RecordedRequest) -> ScriptedResponse:
        route = request.route
        if route == "/-/ready" and request.method in ("GET", "HEAD"):
            return ScriptedResponse(200, b"Prometheus Server is Ready.\n")
        if route != QUERY_PATH or request.method not in ("GET", "POST"):
            return ScriptedResponse(404, error_response("not found", "not_found"), _JSON)
        params = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(request.path).query))
        content_type = request.headers.get("content-type", "")
        if request.method == "POST" and content_type.startswith(
            "application/x-www-form-urlencoded"
        ):
            params.update(urllib.parse.parse_qsl(request.body.decode("utf-8", "replace")))
        with self._lock:
            self._queries.append(params)
            return self._response


def _api_time(at: float) -> float:
    # Prometheus writes whole seconds without a fraction ("1700000000") and keeps ms otherwise.
    if math.isfinite(at) and float(at).is_integer():
        return int(at)
    return round(at, 3)
