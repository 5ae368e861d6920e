"""The usage queries against a real VictoriaMetrics (Debian's `victoria-metrics`, its query
defaults, the 30 s latency offset included), holding a job's CPU counter and scrape count as
imported samples: the job's grid ends at its end, and the scrape count of a job that ended
seconds ago is whole, where the same queries asked without `nocache=1` are moved
(test_prometheus_compatible.py holds the same with recorded answers, without the service).
"""

from __future__ import annotations

import json
import math
import time
import urllib.parse
import urllib.request
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from clusterwatch.loopback.services import make_searchable, victoria_metrics
from clusterwatch.monitor.usage.metrics.series import fetch_job_series

NeedBinary = Callable[[str], str]
LABELS = {"instance": "n1", "job": "jobs", "jobid": "77", "user": "alice"}
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def post(url: str, body: bytes) -> bytes:
    with _OPENER.open(urllib.request.Request(url, body, method="POST"), timeout=10) as answer:
        return bytes(answer.read())


def asked(url: str, path: str, **params: str) -> Any:
    return json.loads(post(url + path, urllib.parse.urlencode(params).encode()))


def test_victoria_metrics_answers_the_usage_queries_where_they_were_asked(
        tmp_path: Path, need_binary: NeedBinary) -> None:
    need_binary("victoria-metrics")
    now = time.time()
    first = math.floor(now) - 400 + 0.25  # a scrape every second, the last 1 s ago
    stamps = [first + k for k in range(400)]
    rows: list[dict[str, object]] = [
        {"metric": {"__name__": name, **LABELS}, "values": values,
         "timestamps": [round(t * 1000) for t in stamps]}
        for name, values in (("jobs_cpu_seconds_total", [0.5 * k for k in range(400)]),
                             ("jobs_info", [1.0] * 400))]
    with victoria_metrics(tmp_path, latency_offset="30s") as store:
        post(f"{store.url}/api/v1/import", "\n".join(json.dumps(r) for r in rows).encode())
        make_searchable(store)

        # A job of 200.6 s that ended 60 s ago: 201 points at 1 s, so VictoriaMetrics would
        # move its grid onto whole seconds, the last point before the end.
        start, end = first + 139.7, first + 340.3  # the last scrape 0.25 s past a whole second
        series = fetch_job_series(store.url, "77", moment(start), moment(end),
                                  scrape_interval_s=1, keys={"cpu_seconds"})
        (cpu,) = series.get("cpu_seconds") or ()
        assert cpu.points[-1][0] == round(end, 3)
        assert cpu.points[-1][1] == 0.5 * 340  # the last scrape before the end
        moved = asked(store.url, "/api/v1/query_range", query='jobs_cpu_seconds_total{jobid="77"}',
                      start=f"{cpu.points[0][0]:.3f}", end=f"{end:.3f}", step="1")
        (row,) = moved["data"]["result"]  # what nocache=1 prevents: the last scrape lost
        assert [float(v) for v in row["values"][-1]] == [math.floor(end), 0.5 * 339]

        # A job that ended 5 s ago, its first scrape at its start: all its scrapes, not only
        # those before now - 30 s.
        start, end = first, now - 5
        series = fetch_job_series(store.url, "77", moment(start), moment(end),
                                  scrape_interval_s=1, keys=set())
        life = math.ceil(end - start + 1)  # the window fetch_job_series counts in
        assert series.samples == sum(1 for t in stamps if end - life < t <= end) > 390
        early = asked(store.url, "/api/v1/query", time=f"{end:.3f}",
                      query=f'count_over_time(jobs_info{{jobid="77"}}[{math.ceil(end - start)}s])')
        assert float(early["data"]["result"][0]["value"][1]) <= series.samples - 20


def moment(at: float) -> datetime:
    return datetime.fromtimestamp(at, timezone.utc)
