"""Property tests: whatever the series say, the figures stay within their bounds."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from clusterwatch.monitor.usage.analysis.figures import analyse
from clusterwatch.monitor.usage.analysis.rules import CODES, check
from clusterwatch.monitor.usage.metrics.prometheus_api import Series
from tests.monitor.usage.usage_support import START, job_series, record

T0 = START.timestamp()
values = st.floats(min_value=0, max_value=1e15, allow_nan=False)


def series_of(draw_values: list[float]) -> Series:
    return Series({"instance": "n1"}, tuple((T0 + 30 * i, v) for i, v in enumerate(draw_values)))


@settings(max_examples=150, deadline=None)
@given(cpu=st.lists(values, max_size=30), rss=st.lists(values, max_size=30),
       gpu=st.lists(st.floats(min_value=0, max_value=5), max_size=30),
       samples=st.integers(min_value=0, max_value=10_000),
       cpus=st.integers(min_value=0, max_value=256), elapsed=st.integers(0, 10**7),
       requested=st.one_of(st.none(), st.integers(0, 2**50)),
       total_cpu=st.one_of(st.none(), values), running=st.booleans())
def test_the_figures_stay_within_their_bounds(
        cpu: list[float], rss: list[float], gpu: list[float], samples: int, cpus: int,
        elapsed: int, requested: int | None, total_cpu: float | None, running: bool) -> None:
    job = record(cpus_allocated=cpus, elapsed_s=elapsed, memory_requested_bytes=requested,
                 total_cpu_s=total_cpu, state="RUNNING" if running else "COMPLETED")
    series = job_series(samples=samples, cpu_seconds=[series_of(cpu)],
                        memory_rss_bytes=[series_of(rss)], gpu_utilization=[series_of(gpu)])
    summary = analyse(job, series)
    assert summary.samples == samples
    if summary.cpu_efficiency is not None:
        assert 0.0 <= summary.cpu_efficiency <= 1.0
    if summary.memory_efficiency is not None:
        assert summary.memory_efficiency >= 0.0
    if summary.memory_peak_bytes is not None:
        assert summary.memory_peak_bytes >= 0
    assert all(0.0 <= g.mean_utilization <= 1.0 for g in summary.gpus)
    assert all(rate >= 0 for _, rate in summary.cores_used)
    warnings = check(job, summary)
    assert {w.code for w in warnings} <= set(CODES)
    if not summary.measured:
        assert warnings == () and summary.cores_used == ()
