"""A job's accounting record and its series -> the figures of its usage report.

Pure: no I/O, no clock. Honest about what it does not know: a series Prometheus lacks
leaves its figure None ("not measured"), never zero, and so does one whose readings cannot
be true (readings.py: negative, not finite, past any node), with a note saying why. Counters
are read reset-aware, as Prometheus' increase() reads them (timeseries.py), by the same
functions the plots use. A job with fewer scrapes than `Thresholds.min_samples` gets
accounting's figures and no curves, and says so; a job still running is marked running, its
figures being "so far".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

from clusterwatch.monitor.usage.accounting.interface import JobRecord
from clusterwatch.monitor.usage.analysis import readings
from clusterwatch.monitor.usage.analysis.thresholds import DEFAULTS, Thresholds
from clusterwatch.monitor.usage.analysis.timeseries import (
    counter_total,
    cumulative,
    mean,
    peak,
    rate,
    sum_by_time,
)
from clusterwatch.monitor.usage.metrics.prometheus_api import Point, Series
from clusterwatch.monitor.usage.metrics.series import JobSeries

EXPORTER = "exporter"
ACCOUNTING = "accounting"

NOTE_RUNNING = "The job is still running: these are its figures so far."
NOTE_NO_SERIES = ("The exporter's series of this job are not available: the figures come "
                  "from accounting alone, and there are no curves.")


@dataclass(frozen=True)
class CoreUse:
    core: str  # "node01/3": the node and the CPU number
    cpu_s: float


@dataclass(frozen=True)
class GpuUse:
    gpu: str  # "node01/GPU-8c2f...": the node and the device's UUID
    mean_utilization: float  # fraction 0-1 over the job's samples


@dataclass(frozen=True)
class NodeUse:
    """One node's part of a job, from the series its exporter (`instance`) reported."""

    node: str  # the exporter's instance, e.g. "node01:9306"
    cpu_used_s: Optional[float]
    cores_used_mean: Optional[float]  # CPUs busy on average over the job's samples there
    memory_peak_bytes: Optional[int]  # anonymous + shared memory on this node
    gpus: tuple[GpuUse, ...]


@dataclass(frozen=True)
class UsageSummary:
    running: bool
    measured: bool  # enough scrapes for curves and advice
    samples: int
    notes: tuple[str, ...]
    cpu_used_s: Optional[float]
    cpu_source: Optional[str]  # EXPORTER, ACCOUNTING, or None when neither knows
    cpu_efficiency: Optional[float]  # fraction 0-1 of elapsed x allocated CPUs
    cpu_user_s: Optional[float]
    cpu_system_s: Optional[float]
    cores_used: tuple[Point, ...]  # CPUs busy over time (summed over nodes)
    cores_used_mean: Optional[float]
    cores_used_max: Optional[float]
    core_seconds: tuple[CoreUse, ...]  # empty: not measured (cgroup v2 has no per-CPU time)
    memory_requested_bytes: Optional[int]
    memory_peak_bytes: Optional[int]  # anonymous memory + shared memory, the job's need
    memory_source: Optional[str]
    memory_efficiency: Optional[float]  # peak / requested; above 1 when no limit held it
    memory_cache_peak_bytes: Optional[int]
    memory_cgroup_peak_bytes: Optional[int]  # what the limit counts, page cache included
    memory_accounting_max_rss_bytes: Optional[int]
    threads_max: Optional[int]
    process_threads_max: Optional[int]
    open_files_max: Optional[int]
    read_bytes: Optional[int]
    write_bytes: Optional[int]
    uses_scratch: Optional[bool]
    gpus_allocated: int
    gpus: tuple[GpuUse, ...]  # empty: not measured
    # Each node's part, by node name; empty when not measured. A one-node job has one.
    per_node: tuple[NodeUse, ...] = ()


def analyse(job: JobRecord, series: Optional[JobSeries],
            thresholds: Thresholds = DEFAULTS) -> UsageSummary:
    """The figures of `job`; `series` None when Prometheus has nothing (retention passed)."""
    series = None if series is None else readings.screened(series)
    samples = 0 if series is None else series.samples
    measured = series is not None and samples >= thresholds.min_samples
    notes = [NOTE_RUNNING] if job.running else []
    if series is None:
        notes.append(NOTE_NO_SERIES)
    elif not measured:
        notes.append(f"The exporter saw this job {samples} times, fewer than "
                     f"{thresholds.min_samples}: the figures come from accounting, there are "
                     "no curves and no advice.")
    impossible = readings.note(dict(series.rejected)) if measured and series else None
    if impossible is not None:
        notes.append(impossible)
    got = _Reader(series if measured else None)
    cpu_used = got.total("cpu_seconds")
    cpu_source = EXPORTER if cpu_used is not None else None
    if cpu_used is None and job.total_cpu_s is not None and not job.running:
        cpu_used, cpu_source = job.total_cpu_s, ACCOUNTING
    cores_used = got.cores_used()
    rss = got.all("memory_rss_bytes")
    # The job's own memory is RSS plus shared memory: without a true shmem there is no peak.
    memory_peak = (_whole(peak(sum_by_time([s.points for s in
                                            (*rss, *got.all("memory_shmem_bytes"))])))
                   if rss and not got.rejected("memory_shmem_bytes") else None)
    memory_source = EXPORTER if memory_peak is not None else None
    if memory_peak is None and job.max_rss_bytes is not None:
        memory_peak, memory_source = job.max_rss_bytes, ACCOUNTING
    return UsageSummary(
        running=job.running, measured=measured, samples=samples, notes=tuple(notes),
        cpu_used_s=cpu_used, cpu_source=cpu_source,
        cpu_efficiency=_cpu_efficiency(cpu_used, job),
        cpu_user_s=_first(got.total("cpu_user_seconds"), None if job.running else job.user_cpu_s),
        cpu_system_s=_first(got.total("cpu_system_seconds"),
                            None if job.running else job.system_cpu_s),
        cores_used=cores_used,
        cores_used_mean=mean(cores_used) if cores_used else None,
        cores_used_max=peak(cores_used) if cores_used else None,
        core_seconds=tuple(CoreUse(_where(s, "core"), cumulative(s.points)[-1][1])
                           for s in got.all("core_seconds")),
        memory_requested_bytes=job.memory_requested_bytes,
        memory_peak_bytes=memory_peak, memory_source=memory_source,
        memory_efficiency=_ratio(memory_peak, job.memory_requested_bytes),
        memory_cache_peak_bytes=got.peak_of_sum("memory_cache_bytes"),
        memory_cgroup_peak_bytes=got.peak_of_sum("memory_usage_bytes"),
        memory_accounting_max_rss_bytes=job.max_rss_bytes,
        threads_max=got.peak_of_sum("threads"),
        process_threads_max=got.highest("process_threads_max"),
        open_files_max=got.peak_of_sum("open_files"),
        read_bytes=_whole(got.total("read_bytes")),
        write_bytes=_whole(got.total("write_bytes")),
        uses_scratch=None if got.highest("uses_scratch") is None
        else bool(got.highest("uses_scratch")),
        gpus_allocated=job.gpus,
        gpus=tuple(_gpu_use(s) for s in got.all("gpu_utilization")),
        per_node=_per_node(got),
    )


def _gpu_use(series: Series) -> GpuUse:
    return GpuUse(_where(series, "gpu_uuid"), min(max(mean(series.points), 0.0), 1.0))


def _per_node(got: _Reader) -> tuple[NodeUse, ...]:
    """The figures of each node, from the same series as the job's, split by `instance`."""
    def on(key: str, node: str) -> tuple[Series, ...]:
        return tuple(s for s in got.all(key) if s.labels.get("instance", "") == node)

    nodes = sorted({s.labels.get("instance", "") for key in ("cpu_seconds", "memory_rss_bytes",
                                                             "gpu_utilization")
                    for s in got.all(key)})
    found = []
    for node in nodes:
        cpu = on("cpu_seconds", node)
        cores = sum_by_time([rate(s.points) for s in cpu])
        rss = on("memory_rss_bytes", node)
        memory = (_whole(peak(sum_by_time([s.points for s in
                                           (*rss, *on("memory_shmem_bytes", node))])))
                  if rss and not got.rejected("memory_shmem_bytes") else None)
        found.append(NodeUse(node, counter_total(cpu) if cpu else None,
                             mean(cores) if cores else None, memory,
                             tuple(_gpu_use(s) for s in on("gpu_utilization", node))))
    return tuple(found)


class _Reader:
    """The series of a measured job; every figure None when the job is not measured."""

    def __init__(self, series: Optional[JobSeries]) -> None:
        self._series = series

    def rejected(self, key: str) -> bool:
        return self._series is not None and key in self._series.rejected

    def all(self, key: str) -> tuple[Series, ...]:
        return () if self._series is None else (self._series.get(key) or ())

    def total(self, key: str) -> Optional[float]:
        found = self.all(key)
        return counter_total(found) if found else None

    def peak_of_sum(self, key: str) -> Optional[int]:
        found = self.all(key)
        return _whole(peak(sum_by_time([s.points for s in found]))) if found else None

    def highest(self, key: str) -> Optional[int]:
        found = self.all(key)
        return _whole(max(peak(s.points) for s in found)) if found else None

    def cores_used(self) -> tuple[Point, ...]:
        return sum_by_time([rate(s.points) for s in self.all("cpu_seconds")])


def _cpu_efficiency(cpu_used: Optional[float], job: JobRecord) -> Optional[float]:
    allocated = job.elapsed_s * job.cpus_allocated
    if cpu_used is None or allocated <= 0:
        return None
    # Counters read a scrape after the job's end can run a little past the allocation.
    return min(max(cpu_used / allocated, 0.0), 1.0)


def _ratio(part: Optional[int], whole: Optional[int]) -> Optional[float]:
    if part is None or not whole:
        return None
    return max(part / whole, 0.0)


def _whole(value: Optional[float]) -> Optional[int]:
    return None if value is None or not math.isfinite(value) else max(round(value), 0)


def _first(*values: Optional[float]) -> Optional[float]:
    return next((v for v in values if v is not None), None)


def _where(series: Series, label: str) -> str:
    return f"{series.labels.get('instance', '')}/{series.labels.get(label, '')}"
