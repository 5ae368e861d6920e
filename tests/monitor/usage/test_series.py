from __future__ import annotations

import socket
import time
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from clusterwatch.monitor.usage.metrics.prometheus_api import PrometheusError
from clusterwatch.monitor.usage.metrics.series import choose_step, fetch_job_series, selector
from tests.monitor.usage.prometheus_range import RangePrometheus

START = datetime(2024, 3, 1, 12, 0, tzinfo=timezone.utc)
T0 = START.timestamp()
JOB = {"jobid": "4242", "user": "alice"}


def scrapes(duration_s: float, value_at: object, every: float = 30.0) -> list[tuple[float, float]]:
    count = int(duration_s // every)
    return [(T0 + every * (i + 1), value_at(every * (i + 1))) for i in range(count)]  # type: ignore[operator]


@given(st.floats(min_value=0, max_value=400 * 86400), st.floats(min_value=1, max_value=300),
       st.integers(min_value=2, max_value=11000))
def test_the_step_bounds_the_points_and_is_never_finer_than_a_scrape(
        duration: float, interval: float, max_points: int) -> None:
    step = choose_step(duration, interval, max_points)
    assert step >= interval and step == int(step)
    assert int(duration // step) + 1 <= max_points


def test_it_escapes_the_job_label_value() -> None:
    assert selector("jobs_threads", 'a"b\\c') == 'jobs_threads{jobid="a\\"b\\\\c"}'


def test_it_reads_each_series_of_a_two_node_job_over_its_life() -> None:
    with RangePrometheus() as prometheus:
        for node in ("node01", "node02"):
            labels = {**JOB, "instance": node}
            prometheus.add("jobs_cpu_seconds_total", labels, scrapes(3600, lambda t: 0.5 * t))
            prometheus.add("jobs_uses_scratch", labels, scrapes(3600, lambda t: 0))
            prometheus.add("jobs_info", {**labels, "account": "physics"},
                           scrapes(3600, lambda t: 1))
        prometheus.add("jobs_threads", {**JOB, "instance": "node01"}, scrapes(3600, lambda t: 4))
        series = fetch_job_series(prometheus.url, "4242", START, START + timedelta(hours=1))
    cpu = series.get("cpu_seconds")
    assert cpu is not None and len(cpu) == 2
    assert {s.labels["instance"] for s in cpu} == {"node01", "node02"}
    assert all(s.points[-1] == (T0 + 3600, 1800.0) for s in cpu)  # the grid ends at the end
    assert series.samples == 120  # scrapes per node, not summed over nodes
    assert series.step == 30
    scratch = series.get("uses_scratch")
    assert scratch is not None and scratch[0].points[-1][1] == 0  # measured: zero
    assert series.get("gpu_utilization") is None  # absent: not measured
    assert series.get("core_seconds") is None


def test_a_long_job_is_read_at_a_bounded_step_without_losing_its_memory_peak() -> None:
    week = 7 * 86400
    peak_at = 3 * 86400 + 45  # one scrape, between two evaluation points

    def rss(t: float) -> float:
        return 64e9 if T0 + t == T0 + peak_at else 1e9

    with RangePrometheus() as prometheus:
        prometheus.add("jobs_memory_rss_bytes", {**JOB, "instance": "n1"},
                       [(T0 + 15 + 30 * i, rss(15 + 30 * i)) for i in range(week // 30)])
        series = fetch_job_series(prometheus.url, "4242", START, START + timedelta(days=7),
                                  max_points=1000)
    (memory,) = series.get("memory_rss_bytes") or ()
    assert len(memory.points) <= 1000
    assert max(v for _, v in memory.points) == 64e9
    assert series.samples == 0  # jobs_info absent: nothing says how many scrapes there were


def test_it_drops_non_finite_points_as_gaps() -> None:
    with RangePrometheus() as prometheus:
        prometheus.add("jobs_gpu_utilization_ratio", {**JOB, "instance": "n1", "gpu_uuid": "G"},
                       [(T0 + 30, 0.5), (T0 + 60, float("nan")), (T0 + 90, 0.7)])
        series = fetch_job_series(prometheus.url, "4242", START, START + timedelta(seconds=90))
    (gpu,) = series.get("gpu_utilization") or ()
    assert gpu.points == ((T0 + 30, 0.5), (T0 + 90, 0.7))
    assert gpu.labels == {"instance": "n1", "gpu_uuid": "G"}


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_prometheus_down_is_a_typed_error_without_the_url() -> None:
    url = f"http://user:secret@127.0.0.1:{closed_port()}"
    with pytest.raises(PrometheusError) as failure:
        fetch_job_series(url, "1", START, START + timedelta(hours=1))
    assert failure.value.kind == "down"
    assert "secret" not in str(failure.value) and "127.0.0.1" not in str(failure.value)


def test_a_slow_prometheus_is_given_up_on_within_the_deadline() -> None:
    with RangePrometheus() as prometheus:
        prometheus.fail_with(200, b"{}", hold=True)  # only the client's clock decides
        started = time.monotonic()
        with pytest.raises(PrometheusError, match=r"no answer within 0\.3 s") as failure:
            fetch_job_series(prometheus.url, "1", START, START + timedelta(hours=1),
                             timeout_s=0.3)
    assert failure.value.kind == "timeout"
    assert time.monotonic() - started < 3


@pytest.mark.parametrize(("status", "body", "kind", "message"), [
    (200, b"<html>proxy login</html>", "refused", "HTTP 200"),
    (503, b"Service Unavailable", "unavailable", "HTTP 503"),
    (400, b'{"status":"error","errorType":"bad_data","error":"exceeded maximum resolution"}',
     "refused", "HTTP 400: exceeded maximum resolution"),
    (200, b'{"status":"success","data":{"resultType":"vector","result":[]}}', "garbage",
     "not a matrix"),
    (200, b'{"status":"success","data":{"resultType":"matrix","result":[{"metric":{}}]}}',
     "garbage", "no values"),
    (200, b'{"status":"success","data":{"resultType":"matrix","result":'
          b'[{"metric":{},"values":[["x"]]}]}}', "garbage", "unreadable"),
])
def test_answers_that_are_not_series_are_typed_errors(
        status: int, body: bytes, kind: str, message: str) -> None:
    with RangePrometheus() as prometheus:
        prometheus.fail_with(status, body)
        with pytest.raises(PrometheusError, match=message) as failure:
            fetch_job_series(prometheus.url, "1", START, START + timedelta(hours=1))
    assert failure.value.kind == kind
