"""Which of a job's series hold readings that cannot be true, and why.

An exporter (or whatever stands between it and Prometheus) can hand over values no job can
have: a negative counter or gauge, NaN or an infinity, a counter growing faster than the
most CPUs a Linux kernel runs, memory beyond any node's size, more threads than a kernel
holds tasks. Such a series is no measurement: `screened` takes it out of the job's series
and says why, so its figures are "not measured" with a note, never a figure, a warning or a
kept value, and its plot says why too. A series is judged whole (every node of it): a sum
over nodes with one node left out would be a wrong figure, not a smaller true one.

The bounds are what no node reaches, not what a node usually has: the monitor does not know
each node's memory or CPUs, and a bound that a real job could pass would hide a real figure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Optional

from clusterwatch.monitor.usage.analysis.timeseries import rate
from clusterwatch.monitor.usage.metrics.prometheus_api import Series
from clusterwatch.monitor.usage.metrics.series import JobSeries

MAX_CPUS = 8192  # the largest NR_CPUS a Linux kernel is built with (x86-64 MAXSMP)
MAX_BYTES = 2**60  # 1 EiB: past any node's memory, and below what a JSON double holds
MAX_LIMIT_BYTES = 2**63  # cgroup v1 writes "no limit" as about 2^63
MAX_TASKS = 2**22  # PID_MAX_LIMIT: a kernel holds no more tasks (so threads) than this
MAX_OPEN_FILES = 2**32  # fs.nr_open is below 2^31 per process
MAX_IO_BYTES_PER_S = 2**40  # 1 TiB/s from storage: no node's I/O comes near it


@dataclass(frozen=True)
class Bound:
    what: str  # the reading in words, as the note names it
    most: float  # the highest true value of a gauge, or per-second growth of a counter
    said: str  # the bound in words, for the note
    counter: bool = False


_CPU = f"growing as if more than {MAX_CPUS:,} CPUs were busy"
BOUNDS: dict[str, Bound] = {
    "cpu_seconds": Bound("CPU time", MAX_CPUS, _CPU, counter=True),
    "cpu_user_seconds": Bound("CPU time in user mode", MAX_CPUS, _CPU, counter=True),
    "cpu_system_seconds": Bound("CPU time in kernel mode", MAX_CPUS, _CPU, counter=True),
    "core_seconds": Bound("CPU time per CPU", MAX_CPUS, _CPU, counter=True),
    "memory_rss_bytes": Bound("memory (RSS)", MAX_BYTES, "more than 1 EiB"),
    "memory_shmem_bytes": Bound("shared memory", MAX_BYTES, "more than 1 EiB"),
    "memory_cache_bytes": Bound("page cache", MAX_BYTES, "more than 1 EiB"),
    "memory_usage_bytes": Bound("cgroup memory", MAX_BYTES, "more than 1 EiB"),
    "memory_limit_bytes": Bound("memory limit", MAX_LIMIT_BYTES, "more than 8 EiB"),
    "memory_oom_kills": Bound(
        "OOM kills", MAX_TASKS, f"more than {MAX_TASKS:,} a second", counter=True
    ),
    "threads": Bound("threads", MAX_TASKS, f"more than {MAX_TASKS:,} threads"),
    "process_threads_max": Bound(
        "threads per process", MAX_TASKS, f"more than {MAX_TASKS:,} threads"
    ),
    "open_files": Bound("open files", MAX_OPEN_FILES, f"more than {MAX_OPEN_FILES:,} files"),
    "read_bytes": Bound("bytes read", MAX_IO_BYTES_PER_S, "more than 1 TiB a second", counter=True),
    "write_bytes": Bound(
        "bytes written", MAX_IO_BYTES_PER_S, "more than 1 TiB a second", counter=True
    ),
    "uses_scratch": Bound("scratch use", 1.0, "a flag above 1"),
    "gpu_utilization": Bound("GPU utilization", 1.0, "more than 100 %"),
    "gpu_memory_used_bytes": Bound("GPU memory", MAX_BYTES, "more than 1 EiB"),
}


def screened(series: JobSeries) -> JobSeries:
    """`series` without the keys whose readings cannot be true; `rejected` says why of each.
    Screening screened series changes nothing."""
    rejected = dict(series.rejected)
    for key, found in series.series.items():
        why = impossible(key, found, series.start, series.step)
        if why is not None:
            rejected[key] = why
    if len(rejected) == len(series.rejected):
        return series
    kept = {key: found for key, found in series.series.items() if key not in rejected}
    return replace(series, series=kept, rejected=rejected)


def impossible(key: str, found: Sequence[Series], start: float, step: float) -> Optional[str]:
    """Why the readings of `key` cannot be true (a few words), or None when they can."""
    bound = BOUNDS.get(key)
    for one in found:
        if one.non_finite:
            return "NaN or an infinity"
        if any(value < 0 for _, value in one.points):
            return "a negative value"
        if bound is None or not one.points:
            continue
        if not bound.counter:
            if max(value for _, value in one.points) > bound.most:
                return bound.said
            continue
        # The job's counters start with it: by its first point it cannot have grown more
        # than the bound allows since the grid's start (at most a step after the job's).
        at, first = one.points[0]
        if first > bound.most * (max(at - start, 0.0) + step) or any(
            per_second > bound.most for _, per_second in rate(one.points)
        ):
            return bound.said
    return None


def note(rejected: dict[str, str]) -> Optional[str]:
    """The note of a job with rejected readings, naming each and why; None without any."""
    if not rejected:
        return None
    parts = [
        f"{BOUNDS[key].what if key in BOUNDS else key} ({why})" for key, why in rejected.items()
    ]
    return (
        "Some of the exporter's readings of this job cannot be true, so they are not "
        f"measured: {', '.join(parts)}."
    )
