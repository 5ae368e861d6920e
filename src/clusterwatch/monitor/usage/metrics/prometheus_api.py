"""Range and instant queries against a Prometheus-compatible HTTP API (Prometheus, Thanos,
VictoriaMetrics), over the project's one outbound HTTP seam.

Each request has one deadline for the whole exchange (clusterwatch.http_client uses
http_deadline): a server that trickles its answer cannot hold a page longer than the
timeout. Every way it can fail is a PrometheusError with a short `kind`; no message quotes
the base URL, which may carry credentials.

Where VictoriaMetrics answers the same request differently (docs/usage.md, "VictoriaMetrics
and other Prometheus-compatible stores"), every request asks it not to: `nocache=1`, which
Prometheus ignores, keeps VictoriaMetrics from moving a range query's grid onto multiples of
its step (it does from 50 points on, so a job's last point was no longer its end) and an
instant query's time back by its -search.latencyOffset (30 s: the scrape count of a job
that ended moments ago came up short). A partial answer (`isPartial`, from a cluster whose
storage nodes did not all answer) is refused: a job read without one of its nodes would be
kept with figures too small.
"""

from __future__ import annotations

import json
import math
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Callable, Optional

from clusterwatch.http_client import HttpResponse, TransportError, request

MAX_ANSWER_BYTES = 64 * 1024 * 1024  # a 16-core job's per-core counters at 1,000 points fit
_DROPPED_LABELS = frozenset({"__name__", "jobid", "user", "job"})
# Sent with every query: VictoriaMetrics then evaluates it where it was asked (see above).
_AS_ASKED = {"nocache": "1"}

# (method, url, body, headers, timeout, max_body) -> answer; tests pass their own.
HttpRequest = Callable[[str, str, Optional[bytes], Optional[Mapping[str, str]], float, int],
                       HttpResponse]
Point = tuple[float, float]


class PrometheusError(Exception):
    """No usable answer. `kind`: down, timeout, unavailable (no answer, or a gateway's 5xx);
    refused, garbage, too_large (Prometheus answered, but not with data we can use)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind

    @property
    def headline(self) -> str:
        """What happened in a few words, for a page or a log: whether Prometheus answered."""
        if self.kind in _ANSWERED:
            return f"Prometheus answered, but not usably ({self.kind})"
        return f"Prometheus is unavailable ({self.kind})"


_ANSWERED = frozenset({"refused", "garbage", "too_large"})


@dataclass(frozen=True)
class Series:
    """One series of a query's answer: its distinguishing labels (instance, core, gpu_uuid;
    the job's own labels dropped) and its finite points (time, value), oldest first.
    `non_finite`: how many NaN or infinite samples the answer held besides them."""

    labels: Mapping[str, str]
    points: tuple[Point, ...]
    non_finite: int = 0


def query_range(base_url: str, promql: str, start: float, end: float, step: float,
                timeout_s: float, http: HttpRequest = request) -> list[Series]:
    params = {"query": promql, "start": _num(start), "end": _num(end), "step": _num(step)}
    data = _ask(base_url, "/api/v1/query_range", params, timeout_s, http)
    return _series(data, "matrix")


def query_instant(base_url: str, promql: str, at: float, timeout_s: float,
                  http: HttpRequest = request) -> list[Series]:
    data = _ask(base_url, "/api/v1/query", {"query": promql, "time": _num(at)}, timeout_s, http)
    return _series(data, "vector")


def query_vector(base_url: str, promql: str, at: float, timeout_s: float,
                 http: HttpRequest = request) -> list[tuple[dict[str, str], float]]:
    """An instant query over many jobs at once (usage_watch): each sample's labels, all of
    them (`jobid` too), and its value as read, NaN and infinities included (the caller
    judges them)."""
    data = _ask(base_url, "/api/v1/query", {"query": promql, "time": _num(at)}, timeout_s, http)
    if not isinstance(data, dict) or data.get("resultType") != "vector":
        raise PrometheusError("garbage", "Prometheus' answer is not a vector")
    rows = data.get("result")
    if not isinstance(rows, list):
        raise PrometheusError("garbage", "Prometheus' answer has no result list")
    samples = []
    for row in rows:
        if not isinstance(row, dict) or not isinstance(row.get("metric"), dict):
            raise PrometheusError("garbage", "a result of Prometheus' answer has no labels")
        labels = {str(k): str(v) for k, v in row["metric"].items()}
        samples.append((labels, _point(row.get("value"))[1]))
    return samples


def _num(value: float) -> str:
    return f"{value:.3f}".rstrip("0").rstrip(".")


def _ask(base_url: str, path: str, params: Mapping[str, str], timeout_s: float,
         http: HttpRequest) -> Any:
    body = urllib.parse.urlencode({**params, **_AS_ASKED}).encode()
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    try:
        answer = http("POST", base_url.rstrip("/") + path, body, headers, timeout_s,
                      MAX_ANSWER_BYTES)
    except TransportError as exc:
        if exc.kind == "timeout":
            raise PrometheusError("timeout", f"Prometheus gave no answer within {timeout_s:g} s"
                                  ) from None
        if exc.kind == "too_large":  # it answered: the answer was what could not be kept
            raise PrometheusError("too_large", f"Prometheus' answer is over "
                                  f"{_size(MAX_ANSWER_BYTES)}, more than one query may bring: "
                                  "too many series to read") from None
        raise PrometheusError("down", f"Prometheus cannot be reached ({exc.kind})") from None
    document = _json(answer.body)
    if answer.status != 200 or document.get("status") != "success":
        error = document.get("error")
        detail = f": {str(error)[:200]}" if isinstance(error, str) else ""
        kind = "unavailable" if answer.status in (502, 503, 504) else "refused"
        raise PrometheusError(kind, f"Prometheus answered HTTP {answer.status}{detail}")
    if document.get("isPartial") is True:
        raise PrometheusError("unavailable", "Prometheus answered with part of the series "
                              "only (isPartial: a storage node did not answer)")
    return document.get("data")


def _size(count: int) -> str:
    return f"{count / 2**20:g} MiB" if count >= 2**20 else f"{count:,} bytes"


def _json(body: bytes) -> dict[str, Any]:
    try:
        document = json.loads(body)
    except ValueError:
        document = None
    return document if isinstance(document, dict) else {}


def _series(data: Any, result_type: str) -> list[Series]:
    if not isinstance(data, dict) or data.get("resultType") != result_type:
        raise PrometheusError("garbage", f"Prometheus' answer is not a {result_type}")
    rows = data.get("result")
    if not isinstance(rows, list):
        raise PrometheusError("garbage", "Prometheus' answer has no result list")
    return _merged([_one(row, result_type) for row in rows])


def _merged(found: list[Series]) -> list[Series]:
    """One Series per label set. Rows that share their labels once the job's own are dropped
    are readings of the same node (an exporter whose `user` label changed mid-job leaves two
    series of one counter; a store that answers a series twice, or two scrape jobs of one
    exporter, the same samples): summed, they would count the node twice. Their points are
    joined, the higher value kept where both have one."""
    by_labels: dict[frozenset[tuple[str, str]], list[Series]] = {}
    for series in found:
        by_labels.setdefault(frozenset(series.labels.items()), []).append(series)
    joined = []
    for same in by_labels.values():
        if len(same) == 1:
            joined.append(same[0])
            continue
        points: dict[float, float] = {}
        for series in same:
            for at, value in series.points:
                points[at] = max(value, points.get(at, value))
        joined.append(Series(same[0].labels, tuple(sorted(points.items())),
                             sum(s.non_finite for s in same)))
    return joined


def _one(row: Any, result_type: str) -> Series:
    if not isinstance(row, dict) or not isinstance(row.get("metric"), dict):
        raise PrometheusError("garbage", "a result of Prometheus' answer has no labels")
    pairs = row.get("values") if result_type == "matrix" else [row.get("value")]
    if not isinstance(pairs, list):
        raise PrometheusError("garbage", "a result of Prometheus' answer has no values")
    labels = {str(k): str(v) for k, v in row["metric"].items() if k not in _DROPPED_LABELS}
    points = [_point(pair) for pair in pairs]
    # NaN and infinities are no measurements: left out of the points, and counted, since a
    # job's readings that hold them cannot be trusted (usage/analysis/readings.py).
    finite = tuple(p for p in points if math.isfinite(p[1]))
    return Series(labels, finite, len(points) - len(finite))


def _point(pair: Any) -> Point:
    try:
        at, value = pair
        return float(at), float(value)
    except (TypeError, ValueError):
        raise PrometheusError("garbage", "a sample of Prometheus' answer is unreadable") from None
