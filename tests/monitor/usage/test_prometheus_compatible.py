"""What VictoriaMetrics answers differently from Prometheus, and that the usage queries read
both alike (docs/usage.md, "VictoriaMetrics and other Prometheus-compatible stores").

Each answer here is the shape a real store gave on loopback (victoria-metrics 1.79.5,
Debian bookworm's; Prometheus 2.42), the values cut short; no service is started. A stand-in
store answers as VictoriaMetrics does to what it is asked: its grid moved onto multiples of
the step from 50 points on, and an instant query's time moved back by its latency offset,
both unless the request says `nocache=1`.
"""

from __future__ import annotations

import json
import math
import urllib.parse
from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from typing import Any, Optional

import pytest

from clusterwatch.http_client import HttpResponse
from clusterwatch.monitor.usage.metrics.prometheus_api import (
    PrometheusError,
    query_instant,
    query_range,
)
from clusterwatch.monitor.usage.metrics.series import fetch_job_series

URL = "http://store.example:8428"
LABELS = {"__name__": "jobs_cpu_seconds_total", "instance": "n1", "job": "jobs", "jobid": "77"}

# victoria-metrics 1.79.5, query_range of a counter with nocache=1: the times asked for
# (start + k * step, fractions kept), values as strings, no other key than Prometheus'.
VM_RANGE = (b'{"status":"success","data":{"resultType":"matrix","result":[{"metric":'
            b'{"__name__":"jobs_cpu_seconds_total","instance":"n1","job":"jobs","jobid":"77"},'
            b'"values":[[1796412378.4,"0"],[1796412408.4,"15"],[1796412438.4,"30"]]}]}}')
# Its instant count_over_time of jobs_info: the name dropped, the job's other labels kept.
VM_COUNT = (b'{"status":"success","data":{"resultType":"vector","result":[{"metric":'
            b'{"instance":"n1","job":"jobs","jobid":"77","user":"alice"},'
            b'"value":[1796414741.4,"80"]}]}}')
# Its refusal of a query: HTTP 422, errorType "422" (Prometheus says "execution").
VM_REFUSAL = (b'{"status":"error","errorType":"422","error":"error when executing query='
              b'\\"jobs_info{jobid=\\\\\\"77\\\\\\"}\\" on the time range (start=1796412378400, '
              b'end=1806412378400, step=1000): too many points for the given step=1000"}')


class Recorder:
    """The HTTP seam: answers each request with `answer(params)`, keeping what was asked."""

    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.asked: list[tuple[str, dict[str, str]]] = []

    def __call__(self, method: str, url: str, body: Optional[bytes],
                 headers: Optional[Mapping[str, str]], timeout: float,
                 max_body: int) -> HttpResponse:
        params = dict(urllib.parse.parse_qsl((body or b"").decode()))
        path = urllib.parse.urlsplit(url).path
        self.asked.append((path, params))
        status, answer = self.answer(path, params)
        return HttpResponse(status, answer)


def always(status: int, body: bytes) -> Recorder:
    return Recorder(lambda path, params: (status, body))


def test_every_query_asks_victoria_metrics_to_evaluate_it_where_it_was_asked() -> None:
    http = always(200, VM_RANGE)
    query_range(URL, 'jobs_cpu_seconds_total{jobid="77"}', 1796412378.4, 1796412438.4, 30,
                5.0, http)
    http.answer = lambda path, params: (200, VM_COUNT)
    query_instant(URL, 'count_over_time(jobs_info{jobid="77"}[2400s])', 1796414741.4, 5.0,
                  http)
    assert http.asked == [
        ("/api/v1/query_range", {"query": 'jobs_cpu_seconds_total{jobid="77"}',
                                 "start": "1796412378.4", "end": "1796412438.4", "step": "30",
                                 "nocache": "1"}),
        ("/api/v1/query", {"query": 'count_over_time(jobs_info{jobid="77"}[2400s])',
                           "time": "1796414741.4", "nocache": "1"}),
    ]


def test_it_reads_victoria_metrics_answers_as_prometheus_answers() -> None:
    (series,) = query_range(URL, "q", 1796412378.4, 1796412438.4, 30, 5.0, always(200, VM_RANGE))
    assert series.labels == {"instance": "n1"}
    assert series.points == ((1796412378.4, 0.0), (1796412408.4, 15.0), (1796412438.4, 30.0))
    (count,) = query_instant(URL, "q", 1796414741.4, 5.0, always(200, VM_COUNT))
    assert count.points == ((1796414741.4, 80.0),) and count.labels == {"instance": "n1"}


@pytest.mark.parametrize("extra", [
    {"isPartial": False},  # a VictoriaMetrics cluster (vmselect) whose storage nodes all answered
    {"stats": {"seriesFetched": "1", "executionTimeMsec": 2}},  # later VictoriaMetrics versions
    {"warnings": ["PromQL warning: ..."], "infos": ["PromQL info: ..."]},  # Prometheus
])
def test_keys_a_store_adds_beside_the_data_change_nothing(extra: dict[str, Any]) -> None:
    document = {**json.loads(VM_RANGE), **extra}
    (series,) = query_range(URL, "q", 1796412378.4, 1796412438.4, 30, 5.0,
                            always(200, json.dumps(document).encode()))
    assert len(series.points) == 3


def test_a_partial_answer_is_no_answer() -> None:
    # vmselect answers with what the storage nodes that answered hold: a job's figures would
    # be those of some of its nodes, and kept so for good.
    document = {**json.loads(VM_RANGE), "isPartial": True}
    with pytest.raises(PrometheusError, match="part of the series") as failure:
        query_range(URL, "q", 1796412378.4, 1796412438.4, 30, 5.0,
                    always(200, json.dumps(document).encode()))
    assert failure.value.kind == "unavailable"


@pytest.mark.parametrize("other", [
    {"user": "1001"},  # the exporter's user label changed mid-job: a second series
    {},  # the same series answered twice
    {"job": "jobs-again"},  # two scrape jobs of one exporter
])
def test_rows_of_one_node_are_one_series_never_summed_twice(other: dict[str, str]) -> None:
    document = json.loads(VM_RANGE)
    (row,) = document["data"]["result"]
    later = {"metric": {**row["metric"], **other},
             "values": [[1796412438.4, "30"], [1796412468.4, "45"]]}
    document["data"]["result"].append(later)
    (series,) = query_range(URL, "q", 1796412378.4, 1796412468.4, 30, 5.0,
                            always(200, json.dumps(document).encode()))
    assert series.labels == {"instance": "n1"}
    assert series.points == ((1796412378.4, 0.0), (1796412408.4, 15.0), (1796412438.4, 30.0),
                             (1796412468.4, 45.0))


def test_nodes_stay_apart() -> None:
    document = json.loads(VM_RANGE)
    (row,) = document["data"]["result"]
    document["data"]["result"].append({**row, "metric": {**row["metric"], "instance": "n2"}})
    found = query_range(URL, "q", 1796412378.4, 1796412438.4, 30, 5.0,
                        always(200, json.dumps(document).encode()))
    assert [s.labels["instance"] for s in found] == ["n1", "n2"]


def test_victoria_metrics_refusal_is_quoted_as_prometheus_refusals_are() -> None:
    with pytest.raises(PrometheusError, match=r"HTTP 422: error when executing query=") as failure:
        query_range(URL, "q", 1796412378.4, 1806412378.4, 1, 5.0, always(422, VM_REFUSAL))
    assert failure.value.kind == "refused"
    assert len(str(failure.value)) < 260  # 200 characters of the store's text at most


# --- a stand-in that answers as victoria-metrics 1.79.5 does ---------------------------

START = datetime(2026, 12, 4, 12, 0, 0, 700000, tzinfo=timezone.utc)  # not on a step
END = START + timedelta(hours=1, seconds=12.5)
SCRAPE_S = 30.0
LATENCY_OFFSET_S = 30.0  # -search.latencyOffset's default
ALIGNED_FROM_POINTS = 50  # fewer points are never moved


def cpu_at(t: float) -> Optional[float]:
    """The job's CPU counter (half a CPU busy) as last scraped at `t`: scrapes every 30 s from
    its start to its end, none after (the series went stale)."""
    first, last = START.timestamp(), END.timestamp()
    if t < first + 1 or t > last + 1e-6:
        return None
    scraped = first + 1 + SCRAPE_S * math.floor((t - first - 1) / SCRAPE_S)
    return 0.5 * (scraped - first)


def victoria_metrics(now: float) -> Recorder:
    def answer(path: str, params: dict[str, str]) -> tuple[int, bytes]:
        as_asked = params.get("nocache") == "1"
        if path == "/api/v1/query_range":
            return matrix(params, as_asked)
        return vector(params, as_asked)

    def matrix(params: dict[str, str], as_asked: bool) -> tuple[int, bytes]:
        start, end, step = (float(params[k]) for k in ("start", "end", "step"))
        points = math.floor((end - start) / step) + 1
        if not as_asked and points >= ALIGNED_FROM_POINTS:
            # Measured: start rounded down to a multiple of step, end up, then cut back to
            # as many points as were asked for.
            start = step * math.floor(start / step)
        counter = params["query"].startswith("jobs_cpu_seconds_total")  # no gauges here
        values: list[Any] = []
        for t in (start + k * step for k in range(points)):
            value = cpu_at(t) if counter else None
            if value is not None:
                values.append([t, repr(value)])
        result: list[Any] = [{"metric": LABELS, "values": values}] if values else []
        return answered("matrix", result)

    def vector(params: dict[str, str], as_asked: bool) -> tuple[int, bytes]:
        at = float(params["time"])
        if not as_asked and now - at < LATENCY_OFFSET_S:
            at = now - LATENCY_OFFSET_S
        window = float(params["query"].rsplit("[", 1)[1].rstrip("s])"))
        first = START.timestamp() + 1
        scrapes = sum(1 for k in range(10_000) if at - window < first + SCRAPE_S * k <= at
                      and first + SCRAPE_S * k <= END.timestamp())
        result: list[Any] = [{"metric": {"jobid": "77"}, "value": [at, str(scrapes)]}]
        return answered("vector", result if scrapes else [])

    return Recorder(answer)


def answered(kind: str, result: list[Any]) -> tuple[int, bytes]:
    return 200, json.dumps({"status": "success",
                            "data": {"resultType": kind, "result": result}}).encode()


def test_a_jobs_grid_on_victoria_metrics_still_ends_at_the_jobs_end() -> None:
    # 121 points at 30 s: VictoriaMetrics would move the grid onto multiples of 30 s, its last
    # point up to a step before the job's end, and the job's last CPU seconds with it.
    http = victoria_metrics(now=END.timestamp() + 3600)
    series = fetch_job_series(URL, "77", START, END, scrape_interval_s=SCRAPE_S, http=http,
                              keys={"cpu_seconds"})
    (cpu,) = series.get("cpu_seconds") or ()
    at, value = cpu.points[-1]
    assert at == pytest.approx(END.timestamp(), abs=1e-3)
    assert value == cpu_at(END.timestamp()) == 0.5 * (3600 + 1)  # the last scrape's
    assert series.samples == 121  # 3,612.5 s at 30 s, the first a second after the start


def test_the_scrape_count_of_a_job_that_just_ended_is_whole_on_victoria_metrics() -> None:
    # Read 5 s after the job's end: VictoriaMetrics would count up to 30 s before that, a
    # scrape short here (at 1 s scrapes, a job read seconds after its end lost most of them).
    http = victoria_metrics(now=END.timestamp() + 5)
    series = fetch_job_series(URL, "77", START, END, scrape_interval_s=SCRAPE_S, http=http,
                              keys=set())
    assert series.samples == 121


def test_the_stand_in_moves_what_victoria_metrics_moves_when_not_asked_not_to() -> None:
    # The two tests above would pass against a stand-in that never moved anything.
    http = victoria_metrics(now=END.timestamp() + 5)
    first, last = START.timestamp(), END.timestamp()
    grid_start = last - 30 * math.floor((last - first) / 30)
    _, aligned = http.answer("/api/v1/query_range", {
        "query": 'jobs_cpu_seconds_total{jobid="77"}', "start": str(grid_start),
        "end": str(last), "step": "30"})
    assert json.loads(aligned)["data"]["result"][0]["values"][-1][0] < last - 1
    _, shifted = http.answer("/api/v1/query", {
        "query": 'count_over_time(jobs_info{jobid="77"}[3643s])', "time": str(last)})
    assert json.loads(shifted)["data"]["result"][0]["value"][1] == "120"
