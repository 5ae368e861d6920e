from __future__ import annotations

import math
from pathlib import Path

import pytest

from clusterwatch.monitor.usage.rendering import plot_units
from clusterwatch.monitor.usage.rendering.plot_metrics import (
    ALIASES,
    METRICS,
    UnknownMetric,
    measured_metrics,
    metric_curves,
    resolve_metric,
)
from tests.monitor.usage.render_support import document_of
from tests.monitor.usage.usage_support import GiB, MiB, good_series, one, record

DOCS = Path(__file__).resolve().parents[3] / "docs" / "usage.md"

# petricore's jobs_exporter series and the nvidia_smi_exporter names its web app plotted
# (field reference, section 3.1), all but the scratch flag, which is no curve.
ORIGINAL_NAMES = ("jobs_cpu_percent", "jobs_cpu_percent_per_core", "jobs_rss",
                  "jobs_spawned_processes", "jobs_opened_files", "jobs_thread_count",
                  "jobs_user_time", "jobs_system_time", "jobs_cpu_time_total",
                  "jobs_cpu_time_core", "jobs_read_mb", "jobs_write_mb", "jobs_read_count",
                  "jobs_write_count", "jobs_gpus_used", "utilization_gpu", "memory_used")


def test_it_resolves_each_of_our_names_to_itself() -> None:
    assert [resolve_metric(name) for name in METRICS] == list(METRICS)


@pytest.mark.parametrize("name", ORIGINAL_NAMES)
def test_it_maps_each_of_the_originals_names_to_one_of_ours(name: str) -> None:
    assert resolve_metric(name) in METRICS


def test_the_originals_plots_map_to_the_same_quantity() -> None:
    assert resolve_metric("jobs_cpu_percent") == "cpu"
    assert resolve_metric("jobs_rss") == "memory"
    assert resolve_metric("jobs_cpu_time_core") == "cores"
    assert {resolve_metric(n) for n in ("jobs_user_time", "jobs_system_time")} == {"cpu_time"}
    assert (resolve_metric("jobs_read_mb"), resolve_metric("jobs_write_mb")) == ("read", "write")


@pytest.mark.parametrize("name", [
    "", "CPU", " cpu", "cpu ", "cpu\n", "cpu/", "../cpu", "../../etc/passwd", "cpu%00",
    "jobs_cpu_percent;rm -rf /", "jobs_uses_scratch", "__class__", "keys", "get",
    "\u0441pu",  # a Cyrillic es where the c should be
    "x" * 10_000,
])
def test_it_refuses_anything_else_in_one_bounded_line(name: str) -> None:
    with pytest.raises(UnknownMetric) as refused:
        resolve_metric(name)
    message = str(refused.value)
    assert "\n" not in message and len(message) < 1000
    assert "cpu, cores, cpu_time, memory" in message and "jobs_cpu_percent" in message


def test_the_cpu_curve_is_the_rate_of_cpu_seconds_summed_over_nodes() -> None:
    series = good_series(cpu_seconds=[one(lambda t: 1.0 * t, node="a"),
                                      one(lambda t: 0.5 * t, node="b")])
    (curve,) = metric_curves(METRICS["cpu"], series)
    assert len(curve.points) == len(series.series["cpu_seconds"][0].points) - 1
    assert all(value == pytest.approx(1.5) for _, value in curve.points)


def test_memory_draws_the_jobs_own_memory_page_cache_and_cgroup_usage() -> None:
    series = good_series(memory_rss_bytes=[one(lambda t: 2 * GiB, node="a"),
                                           one(lambda t: 1 * GiB, node="b")],
                         memory_shmem_bytes=[one(lambda t: 256 * MiB, node="a")])
    own, cache, usage = metric_curves(METRICS["memory"], series)
    assert own.label == "RSS + shared memory"
    assert {value for _, value in own.points} == {3 * GiB + 256 * MiB}
    assert {value for _, value in cache.points} == {512 * MiB}
    assert {value for _, value in usage.points} == {3.5 * GiB}


def test_threads_are_summed_and_the_busiest_process_is_the_highest_anywhere() -> None:
    series = good_series(threads=[one(lambda t: 3, node="a"), one(lambda t: 5, node="b")],
                         process_threads_max=[one(lambda t: 2, node="a"),
                                              one(lambda t: 4, node="b")])
    total, busiest = metric_curves(METRICS["threads"], series)
    assert {v for _, v in total.points} == {8} and {v for _, v in busiest.points} == {4}


def test_per_cpu_and_gpu_curves_are_one_per_series_labelled_by_node() -> None:
    series = good_series(gpu_utilization=[one(lambda t: 0.5, gpu_uuid="GPU-1"),
                                          one(lambda t: 0.25, node="n2", gpu_uuid="GPU-2")])
    labels = [c.label for c in metric_curves(METRICS["gpu_utilization"], series)]
    assert labels == ["node01 GPU GPU-1", "n2 GPU GPU-2"]
    cores = metric_curves(METRICS["cores"], series)
    assert [c.label for c in cores] == ["node01 CPU 0", "node01 CPU 1"]
    assert all(v == pytest.approx(0.98) for _, v in cores[0].points)


def test_what_was_not_measured_has_no_curve_never_zeros() -> None:
    series = good_series(read_bytes=[], write_bytes=[])
    assert measured_metrics(series) == ("cpu", "cores", "cpu_time", "memory", "threads",
                                        "open_files")
    assert metric_curves(METRICS["gpu_memory"], series) == ()
    assert measured_metrics(None) == ()


def test_a_curve_of_nothing_but_nan_is_not_measured() -> None:
    series = good_series(open_files=[one(lambda t: math.nan)])
    assert "open_files" not in measured_metrics(series)


def test_the_allocation_is_the_reference_and_zero_allocation_has_none() -> None:
    job = record(cpus_allocated=16, memory_requested_bytes=8 * GiB)
    document = document_of(job, good_series())
    cpu = METRICS["cpu"].reference(document)
    assert cpu is not None and (cpu.label, cpu.value) == ("allocated: 16 CPUs", 16)
    memory = METRICS["memory"].reference(document)
    assert memory is not None and (memory.label, memory.value) == ("requested: 8.0 GiB", 8 * GiB)
    time = METRICS["cpu_time"].reference(document)
    assert time is not None and time.growing and time.value == 16
    empty = document_of(record(cpus_allocated=0, memory_requested_bytes=None), good_series())
    assert [METRICS[m].reference(empty) for m in ("cpu", "cpu_time", "memory", "threads")] == [
        None] * 4


@pytest.mark.parametrize(("largest", "unit"), [
    (0, "B"), (1023, "B"), (1024, "KiB"), (1024**3 - 1, "MiB"), (4 * GiB, "GiB"),
    (1024**6 * 5, "EiB"), (1e30, "EiB"), (math.inf, "B"), (math.nan, "B")])
def test_byte_units_follow_the_largest_value(largest: float, unit: str) -> None:
    assert plot_units.binary_bytes(largest).unit == unit


def test_time_and_cpu_time_units_follow_the_span() -> None:
    assert [plot_units.elapsed(s).unit for s in (3, 120, 3600, 7 * 86400)] == [
        "seconds", "seconds", "minutes", "hours"]
    assert [plot_units.cpu_time(s).unit for s in (60, 6000, 7 * 86400 * 16)] == [
        "CPU-seconds", "CPU-minutes", "CPU-hours"]


def test_the_docs_give_every_metric_and_every_mapping() -> None:
    text = DOCS.read_text(encoding="utf-8")
    for name in METRICS:
        assert f"`{name}`" in text, name
    for alias, ours in ALIASES.items():
        lines = text.splitlines()
        assert any(f"`{alias}`" in line and f"`{ours}`" in line for line in lines), alias
