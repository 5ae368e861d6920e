"""The job exporter's series of planned jobs, as Prometheus would have scraped them.

A `JobPlan` says what a job asked for (CPUs, memory, its node and times) and how it behaved
(`Usage`: how busy each CPU was, in bursts or steadily, its memory, threads, files and I/O).
`history(plan)` turns it into the exporter's series (the metric names and labels of
docs/jobs.md, with the `instance` and `job` labels Prometheus adds), one point per scrape of
the exporter, and the totals that the scheduler's accounting would report for the same job.

Pure and deterministic: no clock, no I/O; the jitter comes from a generator seeded with the
job id, so the same plan always gives the same series. The demos load them into a real
Prometheus (clusterwatch.loopback.prometheus_history); tests and benchmarks can use them as
they are.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Optional

EXPORTER_PORT = 9306  # `clusterwatch jobs serve --listen :9306`
SCRAPE_JOB = "jobs"  # the scrape job of examples/prometheus/jobs-scrape.yml
SCRAPE_INTERVAL_S = 30.0
COUNTER = "counter"
GAUGE = "gauge"

Point = tuple[float, float]


@dataclass(frozen=True)
class Burst:
    """Busy phases: each cycle of `period_s` starts with `busy_s` of work at the CPUs' full
    figures, then waits with each CPU `quiet_busy` busy and `quiet_memory` of its memory."""

    period_s: float
    busy_s: float
    quiet_busy: float
    quiet_memory: float = 1.0


@dataclass(frozen=True)
class Usage:
    """How a job used what it had. Fractions are 0-1; sizes in bytes; rates per second."""

    core_busy: tuple[float, ...]  # each allocated CPU's busy fraction (in a busy phase)
    rss_bytes: int  # anonymous memory once grown to its plateau
    cache_bytes: int  # page cache at most (it fills as the job reads)
    threads: int
    open_files: int
    read_bytes_per_s: float
    write_bytes_per_s: float
    shmem_bytes: int = 0
    system_share: float = 0.03  # the kernel-mode part of the CPU time
    ramp_s: float = 120.0  # memory grows to its plateau over the job's first `ramp_s`
    burst: Optional[Burst] = None
    jitter: float = 0.02  # relative noise on every reading


@dataclass(frozen=True)
class JobPlan:
    jobid: str
    name: str
    user: str
    uid: int
    account: str
    partition: str
    node: str
    start: float  # unix seconds
    end: float
    memory_requested_bytes: int
    usage: Usage
    first_core: int = 0  # the host CPU number of the job's first CPU (its cpuset)

    @property
    def cpus(self) -> int:
        return len(self.usage.core_busy)

    @property
    def instance(self) -> str:
        return f"{self.node}:{EXPORTER_PORT}"


@dataclass(frozen=True)
class SeriesSamples:
    metric: str
    kind: str  # COUNTER or GAUGE
    labels: tuple[tuple[str, str], ...]
    points: tuple[Point, ...]


@dataclass(frozen=True)
class JobTotals:
    """What the scheduler's accounting says of the job: CPU time to its very end (the last
    scrape comes a little before), and the memory high-water mark of its processes."""

    cpu_s: float
    user_s: float
    system_s: float
    max_rss_bytes: int


@dataclass(frozen=True)
class JobHistory:
    plan: JobPlan
    series: tuple[SeriesSamples, ...]
    totals: JobTotals
    scrapes: int


def scrape_times(plan: JobPlan, interval_s: float = SCRAPE_INTERVAL_S) -> list[float]:
    """When the exporter on the job's node saw the job: Prometheus scrapes each target at a
    fixed offset within the interval, so the grid belongs to the node, not to the job."""
    offset = (sum(plan.node.encode()) * 7.3) % interval_s
    first = math.floor((plan.start - offset) / interval_s) * interval_s + offset
    times = []
    at = first if first > plan.start else first + interval_s
    while at <= plan.end:
        times.append(at)
        at += interval_s
    return times


def history(plan: JobPlan, interval_s: float = SCRAPE_INTERVAL_S) -> JobHistory:
    """Every series of the job, one point per scrape, and its accounting totals."""
    if plan.end <= plan.start or not plan.usage.core_busy:
        raise ValueError(f"job {plan.jobid}: needs an end after its start and at least a CPU")
    # Seeded: the same plan gives the same series (reproducible, not secret).
    noise = random.Random(f"clusterwatch-job-series-{plan.jobid}")  # noqa: S311
    usage = plan.usage
    cores = [0.0] * plan.cpus
    read = write = 0.0
    rows: dict[str, list[Point]] = {}
    peak_rss = 0.0
    previous = plan.start
    times = scrape_times(plan, interval_s)
    for at in times:
        for index, busy in enumerate(usage.core_busy):
            cores[index] += _cpu_seconds(usage, busy, previous, at, plan.start, noise)
        read += usage.read_bytes_per_s * (at - previous) * _wobble(usage, noise)
        write += usage.write_bytes_per_s * (at - previous) * _wobble(usage, noise)
        previous = at
        for key, value in _readings(plan, at, cores, read, write, noise):
            rows.setdefault(key, []).append((at, value))
        peak_rss = max(peak_rss, rows["rss"][-1][1] + rows["shmem"][-1][1])
    tail = [_cpu_seconds(usage, busy, previous, plan.end, plan.start, noise)
            for busy in usage.core_busy]
    cpu_s = sum(cores) + sum(tail)
    totals = JobTotals(cpu_s, cpu_s * (1 - usage.system_share), cpu_s * usage.system_share,
                       round(peak_rss))
    return JobHistory(plan, tuple(_series(plan, rows)), totals, len(times))


def _cpu_seconds(usage: Usage, busy: float, start: float, end: float, job_start: float,
                 noise: random.Random) -> float:
    """CPU seconds of one CPU between two moments: busy and quiet phases weighed exactly."""
    length = end - start
    if usage.burst is None:
        working = length
        quiet = 0.0
    else:
        working = _busy_time(usage.burst, end - job_start) - _busy_time(usage.burst,
                                                                         start - job_start)
        quiet = usage.burst.quiet_busy
    seconds = busy * working + quiet * (length - working)
    return min(seconds * _wobble(usage, noise), length)  # a CPU cannot run past the clock


def _busy_time(burst: Burst, since_start: float) -> float:
    cycles, into = divmod(max(since_start, 0.0), burst.period_s)
    return cycles * burst.busy_s + min(into, burst.busy_s)


def _wobble(usage: Usage, noise: random.Random) -> float:
    return 1.0 + usage.jitter * noise.uniform(-1.0, 1.0)


def _readings(plan: JobPlan, at: float, cores: list[float], read: float, write: float,
              noise: random.Random) -> Iterator[tuple[str, float]]:
    usage = plan.usage
    grown = min(1.0, (at - plan.start) / usage.ramp_s) if usage.ramp_s > 0 else 1.0
    phase = 1.0
    if usage.burst is not None and (at - plan.start) % usage.burst.period_s >= usage.burst.busy_s:
        phase = usage.burst.quiet_memory
    rss = usage.rss_bytes * grown * phase * _wobble(usage, noise)
    cache = min(float(usage.cache_bytes), read) + usage.shmem_bytes
    cpu = sum(cores)
    yield "cpu", cpu
    yield "cpu_user", cpu * (1 - usage.system_share)
    yield "cpu_system", cpu * usage.system_share
    for index, seconds in enumerate(cores):
        yield f"core:{plan.first_core + index}", seconds
    yield "rss", float(round(rss))
    yield "shmem", float(usage.shmem_bytes)
    yield "cache", float(round(cache))
    yield "usage", float(round(rss * 1.02 + cache))  # kernel memory: a little over rss
    yield "limit", float(plan.memory_requested_bytes)
    yield "threads", float(usage.threads + plan.cpus)  # the job's own plus srun's helpers
    yield "process_threads", float(usage.threads)
    yield "open_files", float(max(0, usage.open_files + noise.randint(-2, 2)))
    yield "read", float(round(read))
    yield "write", float(round(write))
    yield "info", 1.0


_METRICS = {  # reading -> (metric, kind)
    "cpu": ("jobs_cpu_seconds_total", COUNTER),
    "cpu_user": ("jobs_cpu_user_seconds_total", COUNTER),
    "cpu_system": ("jobs_cpu_system_seconds_total", COUNTER),
    "core": ("jobs_cpu_core_seconds_total", COUNTER),
    "rss": ("jobs_memory_rss_bytes", GAUGE),
    "shmem": ("jobs_memory_shmem_bytes", GAUGE),
    "cache": ("jobs_memory_cache_bytes", GAUGE),
    "usage": ("jobs_memory_usage_bytes", GAUGE),
    "limit": ("jobs_memory_limit_bytes", GAUGE),
    "threads": ("jobs_threads", GAUGE),
    "process_threads": ("jobs_process_threads_max", GAUGE),
    "open_files": ("jobs_open_files", GAUGE),
    "read": ("jobs_read_bytes_total", COUNTER),
    "write": ("jobs_write_bytes_total", COUNTER),
    "info": ("jobs_info", GAUGE),
}


def _series(plan: JobPlan, rows: dict[str, list[Point]]) -> Iterator[SeriesSamples]:
    # The exporter's labels, then those Prometheus adds for the scrape target.
    common = (("jobid", plan.jobid), ("user", plan.user))
    target = (("instance", plan.instance), ("job", SCRAPE_JOB))
    for key, points in rows.items():
        reading, _, core = key.partition(":")
        metric, kind = _METRICS[reading]
        extra: tuple[tuple[str, str], ...] = ()
        if core:
            extra = (("core", core),)
        elif reading == "info":
            extra = (("uid", str(plan.uid)), ("account", plan.account),
                     ("partition", plan.partition), ("scheduler", "slurm"),
                     ("cgroup", f"slurm/uid_{plan.uid}/job_{plan.jobid}"))
        yield SeriesSamples(metric, kind, common + extra + target, tuple(points))
