"""A loopback Prometheus that stores scraped samples and evaluates the few PromQL forms the
usage reports send: `m{jobid="X"}`, and `max_over_time` / `count_over_time` of it.

`query_range` and `query` are evaluated as Prometheus does: a plain selector takes the
latest sample within 5 minutes before each evaluation time; `*_over_time(...[Ns])` the
samples in (t - N, t]. `fail_with` replaces every answer (status, body, delay, hold).
"""

from __future__ import annotations

import bisect
import json
import math
import re
import threading
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Optional

from clusterwatch.loopback.http_recorder import (
    LoopbackHTTPServer,
    RecordedRequest,
    ScriptedResponse,
)

LOOKBACK_S = 300.0
_JSON = {"Content-Type": "application/json"}
_QUERY = re.compile(r'(?:(max|count)_over_time\()?(\w+)\{jobid="([^"]*)"\}(?:\[(\d+)s\]\))?')

Scrape = tuple[float, float]


class RangePrometheus(LoopbackHTTPServer):
    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._series: list[tuple[str, dict[str, str], list[Scrape]]] = []
        self._failure: Optional[ScriptedResponse] = None
        self.queries: list[dict[str, str]] = []

    def add(self, metric: str, labels: Mapping[str, str], scrapes: Sequence[Scrape]) -> None:
        with self._lock:
            self._series.append((metric, dict(labels), sorted((at, float(v)) for at, v in scrapes)))

    def forget_before(self, at: float) -> None:
        """Retention: every scrape older than `at` is dropped, as Prometheus' are."""
        with self._lock:
            self._series = [(name, labels, [s for s in scrapes if s[0] >= at])
                            for name, labels, scrapes in self._series]

    def fail_with(self, status: int, body: bytes, delay: float = 0.0,
                  hold: bool = False) -> None:
        """Every later answer is this one; with `hold`, kept back until `release()` (or the
        server stops): a Prometheus that never answers, whatever the client's timeout."""
        with self._lock:
            self._failure = ScriptedResponse(status, body, _JSON, delay, hold)

    def respond(self, request: RecordedRequest) -> ScriptedResponse:
        params = dict(urllib.parse.parse_qsl(request.body.decode()))
        with self._lock:
            self.queries.append(params)
            if self._failure is not None:
                return self._failure
            if request.route == "/api/v1/query_range":
                start, end, step = (float(params[k]) for k in ("start", "end", "step"))
                count = int((end - start) // step) + 1
                times = [start + i * step for i in range(count)]
                return self._answer("matrix", self._evaluate(params["query"], times))
            if request.route == "/api/v1/query":
                rows = self._evaluate(params["query"], [float(params["time"])])
                return self._answer("vector", rows)
        return ScriptedResponse(404, b"{}", _JSON)

    def _evaluate(self, query: str, times: list[float]) -> list[dict[str, object]]:
        match = _QUERY.fullmatch(query)
        assert match, f"the fake does not evaluate {query!r}"
        function, metric, jobid, window = match.groups()
        rows: list[dict[str, object]] = []
        for name, labels, scrapes in self._series:
            if name != metric or labels.get("jobid") != jobid:
                continue
            values = []
            ats = [at for at, _value in scrapes]  # sorted: each evaluation is two bisections
            for t in times:
                value = _at(scrapes, ats, t, function, float(window or 0))
                if value is not None:
                    values.append([t, _text(value)])
            if values:
                shown = dict(labels) if function else {"__name__": name, **labels}
                rows.append({"metric": shown, "values": values})
        return rows

    @staticmethod
    def _answer(kind: str, rows: list[dict[str, object]]) -> ScriptedResponse:
        if kind == "vector":
            rows = [{"metric": r["metric"], "value": r["values"][-1]}  # type: ignore[index]
                    for r in rows]
        body = {"status": "success", "data": {"resultType": kind, "result": rows}}
        return ScriptedResponse(200, json.dumps(body).encode(), _JSON)


def _at(scrapes: list[Scrape], ats: list[float], t: float, function: Optional[str],
        window: float) -> Optional[float]:
    # The scrapes in (t - lookback or window, t], found by bisection: a week of 30 s scrapes
    # at 1,000 evaluation times is then milliseconds, not seconds of a loaded machine.
    end = bisect.bisect_right(ats, t)
    if function is None:
        start = bisect.bisect_right(ats, t - LOOKBACK_S)
        return scrapes[end - 1][1] if end > start else None
    inside = [v for _time, v in scrapes[bisect.bisect_right(ats, t - window):end]]
    if not inside:
        return None
    return max(inside) if function == "max" else float(len(inside))


def _text(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return str(int(value)) if value.is_integer() else repr(value)
