from __future__ import annotations

from typing import Optional

import pytest

from clusterwatch.monitor.usage.accounting.interface import JobRecord
from clusterwatch.monitor.usage.analysis.figures import ACCOUNTING, EXPORTER, NOTE_RUNNING, analyse
from clusterwatch.monitor.usage.analysis.rules import check
from clusterwatch.monitor.usage.metrics.series import JobSeries
from tests.monitor.usage.usage_support import (
    HOUR,
    GiB,
    MiB,
    good_series,
    job_series,
    one,
    record,
)


def codes(job: Optional[JobRecord] = None, series: Optional[JobSeries] = None) -> list[str]:
    job = job or record()
    return [w.code for w in check(job, analyse(job, series))]


def test_a_well_behaved_job_gets_its_figures_and_no_warning() -> None:
    summary = analyse(record(), good_series())
    assert summary.measured and not summary.running and summary.notes == ()
    assert summary.cpu_source == EXPORTER
    assert summary.cpu_efficiency == pytest.approx(0.975)
    assert summary.cores_used_mean == pytest.approx(1.95)
    assert summary.cpu_user_s == pytest.approx(1.9 * HOUR)
    assert summary.memory_peak_bytes == 3 * GiB and summary.memory_source == EXPORTER
    assert summary.memory_efficiency == pytest.approx(0.75)
    assert summary.memory_cgroup_peak_bytes == round(3.5 * GiB)
    assert summary.uses_scratch is False  # measured: the job did not use scratch
    assert check(record(), summary) == ()


def test_a_job_using_one_of_two_cpus_gets_low_cpu_efficiency() -> None:
    series = good_series(cpu_seconds=[one(lambda t: t)],
                         core_seconds=[one(lambda t: t, core="0"), one(lambda t: 0, core="1")])
    summary = analyse(record(), series)
    assert summary.cpu_efficiency == pytest.approx(0.5)
    (low, unbalanced) = check(record(), summary)
    assert low.code == "low_cpu_efficiency"
    assert low.figures["cpu_efficiency"] == pytest.approx(0.5)
    assert low.figures["threshold"] == 0.8
    assert "50%" in low.message and "1.0 of its 2 CPUs" in low.message
    assert unbalanced.code == "unbalanced_cores" and unbalanced.figures["cores_below"] == 1


def test_a_job_asking_8_gib_and_using_200_mib_gets_memory_over_request() -> None:
    job = record(memory_requested_bytes=8 * GiB)
    (warning,) = check(job, analyse(job, good_series(memory_rss_bytes=[
        one(lambda t: 180 * MiB)], memory_shmem_bytes=[one(lambda t: 20 * MiB)])))
    assert warning.code == "memory_over_request"
    assert warning.figures["memory_peak_bytes"] == 200 * MiB
    assert warning.figures["memory_efficiency"] == pytest.approx(200 / 8192)
    assert "--mem=1G" in warning.advice


def test_the_memory_rule_compares_fractions_not_a_percentage_with_a_fraction() -> None:
    # The original fired when 100 x used/asked < 0.95, i.e. almost never.
    job = record(memory_requested_bytes=16 * GiB)
    summary = analyse(job, good_series(memory_rss_bytes=[one(lambda t: 6 * GiB)]))
    assert summary.memory_efficiency == pytest.approx(0.375)
    assert [w.code for w in check(job, summary)] == ["memory_over_request"]
    fine = analyse(job, good_series(memory_rss_bytes=[one(lambda t: 9 * GiB)]))
    assert check(job, fine) == ()


def test_a_small_default_request_is_not_called_waste() -> None:
    job = record(memory_requested_bytes=1 * GiB)
    assert codes(job, good_series(memory_rss_bytes=[one(lambda t: 100 * MiB)])) == []


def test_a_job_with_too_few_samples_gets_accounting_figures_and_no_curves() -> None:
    summary = analyse(record(), job_series(samples=3, cpu_seconds=[one(lambda t: t)]))
    assert not summary.measured
    assert summary.cpu_used_s == 7000.0 and summary.cpu_source == ACCOUNTING
    assert summary.memory_peak_bytes == 3 * GiB and summary.memory_source == ACCOUNTING
    assert summary.cores_used == () and summary.core_seconds == ()
    assert "3 times, fewer than 10" in summary.notes[0]
    assert check(record(), summary) == ()


def test_a_job_without_series_says_so_and_invents_nothing() -> None:
    summary = analyse(record(max_rss_bytes=None, total_cpu_s=None), None)
    assert summary.cpu_efficiency is None and summary.memory_peak_bytes is None
    assert summary.memory_efficiency is None and summary.samples == 0
    assert "not available" in summary.notes[0]


def test_missing_series_are_not_measured_never_zero() -> None:
    summary = analyse(record(), job_series(cpu_seconds=[one(lambda t: 1.9 * t)]))
    assert summary.cpu_efficiency == pytest.approx(0.95)
    assert summary.memory_peak_bytes == 3 * GiB and summary.memory_source == ACCOUNTING
    for figure in ("threads_max", "process_threads_max", "open_files_max", "read_bytes",
                   "write_bytes", "uses_scratch", "memory_cache_peak_bytes"):
        assert getattr(summary, figure) is None, figure
    assert summary.core_seconds == () and summary.gpus == ()
    assert check(record(), summary) == ()


def test_a_running_job_is_reported_as_running_and_not_judged_on_memory_yet() -> None:
    job = record(state="RUNNING", end=None, memory_requested_bytes=64 * GiB)
    summary = analyse(job, good_series())
    assert summary.running and NOTE_RUNNING in summary.notes
    assert "memory_over_request" not in [w.code for w in check(job, summary)]


def test_bursty_cpu_compares_the_mean_with_the_peak() -> None:
    def bursts(t: float) -> float:  # 2 CPUs busy one step in four, idle otherwise
        return 2 * 30 * (t // 120) + (2 * (t % 120) if t % 120 <= 30 else 60)

    assert "bursty_cpu" in codes(series=good_series(cpu_seconds=[one(bursts)]))


def test_a_late_scrape_is_no_burst() -> None:
    """A steady job on a loaded node: one scrape comes late, so one step reads two intervals'
    CPU time (4 cores busy on a 2-CPU job) and the next reads none. The peak above the
    allocation is the scrape's, not the job's: no bursty_cpu (seen in the end-to-end test
    under load: a 1-CPU job 93 % busy was told its CPU came in bursts)."""

    def steady_but_late(t: float) -> float:  # 2 CPUs busy; the reading at 600 s came at 630 s
        return 2 * 630 if 600 <= t < 630 else 2 * t

    summary = analyse(record(), good_series(cpu_seconds=[one(steady_but_late)]))
    assert summary.cores_used_max is not None and summary.cores_used_max > 2.5  # the artefact
    assert "bursty_cpu" not in codes(series=good_series(cpu_seconds=[one(steady_but_late)]))


def test_too_many_threads_counts_cpus_per_node() -> None:
    job = record(cpus_allocated=8, nodes=2)  # 4 CPUs on each node: 9 threads are too many
    series = good_series(cpu_seconds=[one(lambda t: 7.9 * t)], core_seconds=[],
                         process_threads_max=[one(lambda t: 9)])
    (warning,) = check(job, analyse(job, series))
    assert warning.code == "too_many_threads" and warning.figures["cpus_per_node"] == 4


def test_many_small_files() -> None:
    series = good_series(open_files=[one(lambda t: 2000)])
    assert codes(series=series) == ["many_small_files"]


def test_no_scratch_fires_only_when_measured_and_the_job_did_real_io() -> None:
    heavy = {"read_bytes": [one(lambda t: 4 * GiB)], "write_bytes": [one(lambda t: GiB)]}
    assert codes(series=good_series(**heavy)) == ["no_scratch"]
    assert codes(series=good_series(**heavy, uses_scratch=[one(lambda t: 1)])) == []
    assert codes(series=good_series(**heavy, uses_scratch=[])) == []  # no scratch path set


def test_idle_gpus_are_found_by_uuid_among_many() -> None:
    job = record(gpus=12)
    gpus = [one(lambda t: 0.9, gpu_uuid=f"GPU-{i:02d}") for i in range(11)]
    gpus.append(one(lambda t: 0.0, gpu_uuid="GPU-11"))
    summary = analyse(job, good_series(gpu_utilization=gpus))
    assert len(summary.gpus) == 12 and summary.gpus[-1].gpu == "node01/GPU-11"
    (warning,) = check(job, summary)
    assert warning.code == "idle_gpu"
    assert (warning.figures["gpus_below"], warning.figures["gpus_measured"]) == (1, 12)


def test_a_two_node_job_gets_each_nodes_part_from_the_series_of_its_exporter() -> None:
    job = record(nodes=2, cpus_allocated=4, gpus=1)
    series = good_series(
        cpu_seconds=[one(lambda t: 1.9 * t, node="node01:9306"),
                     one(lambda t: 0.1 * t, node="node02:9306")],
        memory_rss_bytes=[one(lambda t: 3 * GiB, node="node01:9306"),
                          one(lambda t: 100 * MiB, node="node02:9306")],
        memory_shmem_bytes=[one(lambda t: 1 * GiB, node="node01:9306")],
        gpu_utilization=[one(lambda t: 0.0, node="node02:9306", gpu_uuid="GPU-1")])
    summary = analyse(job, series)
    first, second = summary.per_node
    assert (first.node, second.node) == ("node01:9306", "node02:9306")
    assert first.cpu_used_s == pytest.approx(1.9 * HOUR)
    assert second.cores_used_mean == pytest.approx(0.1)
    assert (first.memory_peak_bytes, second.memory_peak_bytes) == (4 * GiB, 100 * MiB)
    assert first.gpus == () and [g.mean_utilization for g in second.gpus] == [0.0]
    # The job's own figures are the nodes' together.
    assert summary.cpu_used_s == pytest.approx(first.cpu_used_s + second.cpu_used_s)
    assert summary.memory_peak_bytes == 4 * GiB + 100 * MiB


def test_a_job_not_measured_has_no_node_parts() -> None:
    assert analyse(record(), None).per_node == ()
    assert analyse(record(), job_series(samples=3, cpu_seconds=[one(lambda t: t)])).per_node == ()
