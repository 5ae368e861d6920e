"""Readings that cannot be true (issue 19 item 16): negative, not finite, past any node. Each
is "not measured" with a note saying why, never a figure, a warning or a kept value; the
usage document never holds a number a JSON reader's double cannot hold."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clusterwatch.monitor.usage.analysis.figures import analyse
from clusterwatch.monitor.usage.analysis.readings import MAX_BYTES, MAX_CPUS, MAX_TASKS, screened
from clusterwatch.monitor.usage.analysis.rules import check
from clusterwatch.monitor.usage.analysis.summary_json import usage_document
from clusterwatch.monitor.usage.metrics.prometheus_api import Series, query_range
from tests.monitor.usage.prometheus_range import RangePrometheus
from tests.monitor.usage.usage_support import START, GiB, good_series, one, record

T0 = START.timestamp()


def scaled(factor: float) -> dict[str, list[Series]]:
    """Every series of the good job, each value times `factor`."""
    return {
        key: [Series(s.labels, tuple((t, v * factor) for t, v in s.points)) for s in found]
        for key, found in good_series().series.items()
    }


def strict_json(document: object) -> object:
    """The document as a strict JSON reader of doubles reads it; fails on any number past."""

    def double(text: str) -> float:
        value = float(text)
        assert math.isfinite(value), f"{text[:30]}... is past a double"
        return value

    return json.loads(json.dumps(document, allow_nan=False), parse_int=double, parse_float=double)


def test_a_job_scaled_by_1e300_has_no_figure_no_warning_and_a_note() -> None:
    job = record(total_cpu_s=None, user_cpu_s=None, system_cpu_s=None, max_rss_bytes=None)
    summary = analyse(job, good_series(**scaled(1e300)))
    assert summary.cpu_used_s is None and summary.cpu_efficiency is None
    assert summary.cores_used == () and summary.cores_used_mean is None
    assert summary.memory_peak_bytes is None and summary.memory_cgroup_peak_bytes is None
    assert summary.threads_max is None and summary.process_threads_max is None
    assert summary.open_files_max is None and summary.read_bytes is None
    assert check(job, summary) == ()  # too_many_threads fired on 3e300 threads
    (note,) = summary.notes
    assert note.startswith("Some of the exporter's readings of this job cannot be true")
    assert "CPU time (growing as if more than 8,192 CPUs were busy)" in note
    assert "memory (RSS) (more than 1 EiB)" in note and "threads (more than" in note
    strict_json(usage_document(job, summary, ()))


def test_negative_counters_are_not_measured_and_accounting_stands_in() -> None:
    job = record()
    negative = {key: scaled(-1.0)[key] for key in ("cpu_seconds", "cpu_user_seconds")}
    summary = analyse(job, good_series(**negative))
    # Was -7020 s, and a low_cpu_efficiency warning; accounting's sacct TotalCPU is another
    # source, so it stands in as it does when the exporter has no series.
    assert summary.cpu_used_s == job.total_cpu_s and summary.cpu_source == "accounting"
    assert summary.cpu_user_s == job.user_cpu_s
    assert summary.cores_used == ()
    assert "CPU time (a negative value)" in summary.notes[0]
    assert "CPU time in user mode (a negative value)" in summary.notes[0]


@pytest.mark.parametrize("value", ["NaN", "+Inf", "-Inf"])
def test_a_nan_or_infinite_sample_from_prometheus_makes_its_series_not_measured(value: str) -> None:
    with RangePrometheus() as prometheus:
        scrapes = [
            (
                T0 + 30 * i,
                math.nan if value == "NaN" and i == 5 else float(value) if i == 5 else 2.0 * GiB,
            )
            for i in range(20)
        ]
        prometheus.add("jobs_memory_rss_bytes", {"jobid": "1", "instance": "n1"}, scrapes)
        (found,) = query_range(
            prometheus.url, 'jobs_memory_rss_bytes{jobid="1"}', T0, T0 + 570, 30, 5.0
        )
    assert found.non_finite == 1 and len(found.points) == 19
    summary = analyse(record(max_rss_bytes=None), good_series(memory_rss_bytes=[found]))
    assert summary.memory_peak_bytes is None and summary.memory_efficiency is None
    assert "memory (RSS) (NaN or an infinity)" in summary.notes[0]


def test_shared_memory_that_cannot_be_true_leaves_the_jobs_own_memory_unmeasured() -> None:
    summary = analyse(
        record(max_rss_bytes=None), good_series(memory_shmem_bytes=[one(lambda t: -1.0)])
    )
    assert summary.memory_peak_bytes is None  # RSS alone would understate it
    assert summary.memory_cache_peak_bytes is not None  # the page cache itself is true


@pytest.mark.parametrize(
    ("key", "value", "true"),
    [
        ("memory_rss_bytes", MAX_BYTES, True),
        ("memory_rss_bytes", MAX_BYTES * 2, False),
        ("threads", MAX_TASKS, True),
        ("threads", MAX_TASKS + 1, False),
        ("process_threads_max", MAX_TASKS + 1, False),
        ("gpu_utilization", 1.0, True),
        ("gpu_utilization", 1.5, False),
        ("uses_scratch", 2.0, False),
        ("open_files", -1.0, False),
    ],
)
def test_the_bounds_of_gauges(key: str, value: float, true: bool) -> None:
    series = good_series(**{key: [one(lambda t: value)]})
    assert (key in screened(series).rejected) is not true


def test_a_counter_may_grow_as_fast_as_the_most_cpus_a_kernel_runs_not_faster() -> None:
    fast = good_series(cpu_seconds=[one(lambda s: MAX_CPUS * s)])
    assert "cpu_seconds" not in screened(fast).rejected
    faster = good_series(cpu_seconds=[one(lambda s: (MAX_CPUS + 1) * s)])
    assert "cpu_seconds" in screened(faster).rejected
    # A first point past what the job could have used by then: a counter of someone else's.
    stale = good_series(cpu_seconds=[one(lambda s: 1e12 + s)])
    assert "cpu_seconds" in screened(stale).rejected


def test_one_bad_node_rejects_the_figure_not_just_the_node() -> None:
    series = good_series(memory_rss_bytes=[one(lambda t: GiB), one(lambda t: -1, "node02")])
    assert "memory_rss_bytes" in screened(series).rejected
    assert analyse(record(max_rss_bytes=None), series).memory_peak_bytes is None


def test_screening_is_idempotent_and_leaves_true_series_alone() -> None:
    series = good_series()
    assert screened(series) is series
    once = screened(good_series(**scaled(-1.0)))
    assert screened(once) == once


readings = st.floats(allow_nan=True, allow_infinity=True)


@settings(max_examples=100, deadline=None)
@given(st.lists(readings, min_size=12, max_size=30), st.lists(readings, min_size=12, max_size=30))
def test_no_reading_whatever_puts_past_a_double_or_a_negative_figure_in_the_document(
    cpu: list[float], memory: list[float]
) -> None:
    def series_of(values: list[float]) -> Series:
        kept = tuple((T0 + 30 * i, v) for i, v in enumerate(values) if math.isfinite(v))
        return Series({"instance": "n1"}, kept, len(values) - len(kept))

    job = record(total_cpu_s=None, max_rss_bytes=None)
    summary = analyse(
        job,
        good_series(
            cpu_seconds=[series_of(cpu)],
            memory_rss_bytes=[series_of(memory)],
            threads=[series_of(memory)],
            process_threads_max=[series_of(memory)],
        ),
    )
    document = usage_document(job, summary, check(job, summary))
    strict_json(document)
    for key in ("cpu_used_s", "cpu_efficiency", "memory_peak_bytes"):
        assert document[key] is None or document[key] >= 0  # type: ignore[operator]
