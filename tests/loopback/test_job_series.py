"""The planned jobs' exporter series: scrapes on the node's grid, counters that only grow and
never outrun the clock, the exporter's labels, bursts, and accounting totals that agree."""

from __future__ import annotations

import dataclasses

import pytest

from clusterwatch.loopback.job_series import (
    COUNTER,
    GAUGE,
    Burst,
    JobHistory,
    JobPlan,
    SeriesSamples,
    Usage,
    history,
    scrape_times,
)

START = 1_800_000_000.0
GiB = 1024**3


def plan(**changes: object) -> JobPlan:
    usage = Usage(core_busy=(0.9, 0.5), rss_bytes=2 * GiB, cache_bytes=GiB // 2, threads=3,
                  open_files=20, read_bytes_per_s=1e6, write_bytes_per_s=5e5,
                  shmem_bytes=64 * 1024**2)
    base = JobPlan(jobid="4242", name="test", user="alice", uid=1001, account="physics",
                   partition="cpu", node="node01", start=START, end=START + 3600,
                   memory_requested_bytes=4 * GiB, usage=usage, first_core=6)
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def series(job: JobHistory, metric: str) -> list[SeriesSamples]:
    return [one for one in job.series if one.metric == metric]


def only(job: JobHistory, metric: str) -> SeriesSamples:
    found = series(job, metric)
    assert len(found) == 1, [s.labels for s in found]
    return found[0]


def test_it_scrapes_every_interval_within_the_jobs_life() -> None:
    times = scrape_times(plan())
    assert all(START < at <= START + 3600 for at in times)
    assert {round(b - a, 6) for a, b in zip(times, times[1:])} == {30.0}
    assert len(times) in (119, 120)
    # The grid belongs to the node: another job on the same node shares its phase.
    later = scrape_times(plan(start=START + 1234.5, end=START + 4000))
    assert (later[0] - times[0]) % 30 == pytest.approx(0) or \
        (later[0] - times[0]) % 30 == pytest.approx(30)


def test_it_keeps_counters_growing_and_within_the_clock() -> None:
    job = history(plan())
    for one in job.series:
        if one.kind != COUNTER:
            continue
        values = [value for _, value in one.points]
        assert values == sorted(values), one.metric
    for core in series(job, "jobs_cpu_core_seconds_total"):
        (first_at, first), *_, (last_at, last) = core.points
        assert first <= first_at - START + 1e-9
        assert last <= last_at - START + 1e-9
    cpu = only(job, "jobs_cpu_seconds_total").points[-1][1]
    user = only(job, "jobs_cpu_user_seconds_total").points[-1][1]
    system = only(job, "jobs_cpu_system_seconds_total").points[-1][1]
    assert user + system == pytest.approx(cpu)
    assert sum(c.points[-1][1] for c in series(job, "jobs_cpu_core_seconds_total")) == \
        pytest.approx(cpu)


def test_it_uses_each_cpu_as_planned_and_accounting_counts_to_the_end() -> None:
    job = history(plan())
    per_core = {dict(c.labels)["core"]: c.points[-1][1]
                for c in series(job, "jobs_cpu_core_seconds_total")}
    assert set(per_core) == {"6", "7"}  # host CPU numbers from first_core
    last_scrape = only(job, "jobs_cpu_seconds_total").points[-1][0]
    assert per_core["6"] == pytest.approx(0.9 * (last_scrape - START), rel=0.02)
    assert per_core["7"] == pytest.approx(0.5 * (last_scrape - START), rel=0.02)
    # Accounting's total runs to the job's end, past the last scrape.
    assert job.totals.cpu_s >= sum(per_core.values())
    assert job.totals.cpu_s == pytest.approx(1.4 * 3600, rel=0.02)
    assert job.totals.user_s + job.totals.system_s == pytest.approx(job.totals.cpu_s)
    assert job.scrapes == len(only(job, "jobs_info").points)


def test_it_grows_memory_to_its_plateau_and_reports_the_peak_to_accounting() -> None:
    job = history(plan())
    rss = only(job, "jobs_memory_rss_bytes").points
    assert rss[0][1] < 0.3 * 2 * GiB  # the first scrape comes within the 120 s ramp
    assert max(v for _, v in rss) == pytest.approx(2 * GiB, rel=0.02)
    shmem = only(job, "jobs_memory_shmem_bytes").points
    assert job.totals.max_rss_bytes == max(r + s for (_, r), (_, s) in zip(rss, shmem))
    usage = dict(only(job, "jobs_memory_usage_bytes").points)
    cache = dict(only(job, "jobs_memory_cache_bytes").points)
    assert all(usage[at] >= value + cache[at] for at, value in rss)
    assert {v for _, v in only(job, "jobs_memory_limit_bytes").points} == {4 * GiB}


def test_it_labels_every_series_as_the_exporter_and_prometheus_do() -> None:
    job = history(plan())
    for one in job.series:
        labels = dict(one.labels)
        assert (labels["jobid"], labels["user"]) == ("4242", "alice")
        assert (labels["instance"], labels["job"]) == ("node01:9306", "jobs")
        assert one.kind in (COUNTER, GAUGE)
        assert one.metric.endswith("_total") == (one.kind == COUNTER)
    info = dict(only(job, "jobs_info").labels)
    assert info == {"jobid": "4242", "user": "alice", "uid": "1001", "account": "physics",
                    "partition": "cpu", "scheduler": "slurm", "cgroup": "slurm/uid_1001/job_4242",
                    "instance": "node01:9306", "job": "jobs"}
    assert {one.metric for one in job.series} == {
        "jobs_cpu_seconds_total", "jobs_cpu_user_seconds_total", "jobs_cpu_system_seconds_total",
        "jobs_cpu_core_seconds_total", "jobs_memory_rss_bytes", "jobs_memory_shmem_bytes",
        "jobs_memory_cache_bytes", "jobs_memory_usage_bytes", "jobs_memory_limit_bytes",
        "jobs_threads", "jobs_process_threads_max", "jobs_open_files", "jobs_read_bytes_total",
        "jobs_write_bytes_total", "jobs_info"}


def test_it_alternates_busy_and_quiet_phases_for_a_bursty_job() -> None:
    bursty = dataclasses.replace(plan().usage, core_busy=(1.0,) * 4, jitter=0.0,
                                 burst=Burst(period_s=600, busy_s=120, quiet_busy=0.0,
                                             quiet_memory=0.5))
    job = history(plan(usage=bursty))
    points = only(job, "jobs_cpu_seconds_total").points
    rates = [(b - a) / (tb - ta) for (ta, a), (tb, b) in zip(points, points[1:])]
    assert max(rates) == pytest.approx(4.0)
    assert min(rates) == pytest.approx(0.0)
    # A fifth of each cycle busy on four CPUs: 0.8 CPUs on average over the hour.
    assert job.totals.cpu_s == pytest.approx(0.8 * 3600)
    rss = [v for at, v in only(job, "jobs_memory_rss_bytes").points if at - START > 120]
    assert min(rss) == pytest.approx(GiB) and max(rss) == pytest.approx(2 * GiB)


def test_it_gives_the_same_series_for_the_same_plan_and_others_for_another_job() -> None:
    assert history(plan()) == history(plan())
    other = history(plan(jobid="4243"))
    assert only(other, "jobs_cpu_seconds_total").points != \
        only(history(plan()), "jobs_cpu_seconds_total").points


@pytest.mark.parametrize("changes", [{"end": START}, {"end": START - 10},
                                     {"usage": Usage((), 1, 1, 1, 1, 1.0, 1.0)}])
def test_it_refuses_a_job_without_a_life_or_a_cpu(changes: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="4242"):
        history(plan(**changes))


def test_a_job_shorter_than_a_scrape_has_no_points_but_its_accounting() -> None:
    job = history(plan(end=START + 5))
    assert job.scrapes == 0 and job.series == ()
    assert 0 < job.totals.cpu_s <= 5 * 2 and job.totals.max_rss_bytes == 0
