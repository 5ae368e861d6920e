"""The metrics a usage plot can show: for each, its title, what its y axis measures and in
which unit, the curves it draws from a job's series, and the allocation drawn beside them.

The original web app's metric names (petricore's `jobs_*`, and `utilization_gpu` /
`memory_used` of the nvidia_smi_exporter it joined) are accepted as aliases of ours, so its
links keep working; docs/usage.md gives each mapping. Names are matched exactly against
these tables: nothing a caller sends reaches a file name or a query. Pure: plain data in,
plain data out; plots.py draws what this module describes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Optional

from clusterwatch.monitor.core.humanize import size_text
from clusterwatch.monitor.usage.analysis import readings
from clusterwatch.monitor.usage.analysis.summary_json import UsageDocument
from clusterwatch.monitor.usage.analysis.timeseries import cumulative, rate, sum_by_time
from clusterwatch.monitor.usage.metrics.prometheus_api import Point, Series
from clusterwatch.monitor.usage.metrics.series import JobSeries
from clusterwatch.monitor.usage.rendering import plot_units


class UnknownMetric(ValueError):
    """Not a metric name; the message is one line listing the valid ones."""

    def __init__(self, name: str) -> None:
        shown = repr(name[:40] + ("..." if len(name) > 40 else ""))
        super().__init__(f"unknown metric {shown}: use one of {', '.join(METRICS)} "
                         f"(or the original's {', '.join(ALIASES)})")


@dataclass(frozen=True)
class Curve:
    label: str
    points: tuple[Point, ...]  # (unix time, value in base units)


# A job's series -> the curves of one metric (empty: nothing to draw).
Curves = Callable[[JobSeries], tuple[Curve, ...]]


@dataclass(frozen=True)
class Reference:
    """The allocation beside the curves. `growing`: it accumulates, value per second of the
    job's life (allocated CPU time grows at `cpus` CPU-seconds per second)."""

    label: str
    value: float
    growing: bool = False


@dataclass(frozen=True)
class PlotMetric:
    name: str
    title: str
    quantity: str  # the y axis label, before its unit
    scale: plot_units.Scaler
    keys: tuple[str, ...]  # every JobSeries key its curves read: all a plot fetches
    counter: bool  # its curves are rates or totals of counters
    missing: str  # why it is often not measured, in plain words
    curves: Curves
    reference: Callable[[UsageDocument], Optional[Reference]]


def _found(series: JobSeries, key: str) -> tuple[Series, ...]:
    return series.get(key) or ()


def _total(label: str, key: str, *, per_second: bool = False, counter: bool = False) -> Curves:
    """One curve: the key's series summed over nodes; of a counter, its rate (`per_second`)
    or its running total (`counter`), resets read as the figures read them."""
    def curves(series: JobSeries) -> tuple[Curve, ...]:
        found = _found(series, key)
        points = sum_by_time(rate(s.points) if per_second
                             else cumulative(s.points) if counter else s.points
                             for s in found)
        return (Curve(label, points),) if points else ()
    return curves


def _combined(*parts: Curves) -> Curves:
    return lambda series: tuple(curve for part in parts for curve in part(series))


def _memory_own(series: JobSeries) -> tuple[Curve, ...]:
    # The job's own memory is what analysis calls its peak: anonymous plus shared memory.
    own = (*_found(series, "memory_rss_bytes"), *_found(series, "memory_shmem_bytes"))
    if not _found(series, "memory_rss_bytes") or "memory_shmem_bytes" in series.rejected:
        return ()
    return (Curve("RSS + shared memory", sum_by_time(s.points for s in own)),)


def _each(key: str, what: str, label: str, per_second: bool = False) -> Curves:
    """One curve per series (per CPU, per GPU), labelled by node and `label`'s value."""
    def curves(series: JobSeries) -> tuple[Curve, ...]:
        return tuple(Curve(f"{s.labels.get('instance', '?')} {what} {s.labels.get(label, '?')}",
                           rate(s.points) if per_second else s.points)
                     for s in _found(series, key))
    return curves


def _highest_per_time(series: Iterable[Series]) -> tuple[Point, ...]:
    highest: dict[float, float] = {}
    for found in series:
        for at, value in found.points:
            highest[at] = max(highest.get(at, -math.inf), value)
    return tuple(sorted(highest.items()))


def _threads(series: JobSeries) -> tuple[Curve, ...]:
    curves = _total("threads of all processes", "threads")(series)
    one = _highest_per_time(_found(series, "process_threads_max"))
    return curves + ((Curve("threads of the busiest process", one),) if one else ())


def _cpus(document: UsageDocument) -> Optional[Reference]:
    count = document["cpus_allocated"]
    return Reference(f"allocated: {count} CPUs", count) if count > 0 else None


def _cpu_time_allocation(document: UsageDocument) -> Optional[Reference]:
    count = document["cpus_allocated"]
    return (Reference(f"allocated: {count} CPUs x time", count, growing=True)
            if count > 0 else None)


def _requested_memory(document: UsageDocument) -> Optional[Reference]:
    requested = document["memory_requested_bytes"]
    return (Reference(f"requested: {size_text(requested)}", requested)
            if requested else None)


def _whole_cpu(_document: UsageDocument) -> Optional[Reference]:
    return Reference("100 %: a CPU busy all the time", 1.0)


def _none(_document: UsageDocument) -> Optional[Reference]:
    return None


_PERCENT = plot_units.fixed(100.0, "%")
_PER_CPU = "the exporter reports time per CPU on cgroup v1 nodes only"
_IO = "the exporter reports I/O when it may read the job's /proc/<pid>/io"
_GPU = "no GPU of this job was measured"

METRICS: dict[str, PlotMetric] = {m.name: m for m in (
    PlotMetric("cpu", "CPUs busy", "CPUs busy", plot_units.fixed(1.0, "CPUs"),
               ("cpu_seconds",), True, "the exporter reported no CPU time",
               _total("CPUs busy (all nodes)", "cpu_seconds", per_second=True), _cpus),
    PlotMetric("cores", "Per-CPU use", "busy", _PERCENT, ("core_seconds",), True, _PER_CPU,
               _each("core_seconds", "CPU", "core", per_second=True), _whole_cpu),
    PlotMetric("cpu_time", "CPU time used", "CPU time", plot_units.cpu_time,
               ("cpu_seconds", "cpu_user_seconds", "cpu_system_seconds"), True,
               "the exporter reported no CPU time",
               _combined(_total("total", "cpu_seconds", counter=True),
                         _total("user", "cpu_user_seconds", counter=True),
                         _total("system", "cpu_system_seconds", counter=True)),
               _cpu_time_allocation),
    PlotMetric("memory", "Memory", "memory", plot_units.binary_bytes,
               ("memory_rss_bytes", "memory_shmem_bytes", "memory_cache_bytes",
                "memory_usage_bytes"), False,
               "the exporter reported no memory figures",
               _combined(_memory_own, _total("page cache", "memory_cache_bytes"),
                         _total("cgroup usage", "memory_usage_bytes")),
               _requested_memory),
    PlotMetric("threads", "Threads", "threads", plot_units.fixed(1.0, "threads"),
               ("threads", "process_threads_max"), False,
               "the exporter reported no processes", _threads, _cpus),
    PlotMetric("open_files", "Open files", "open file descriptors",
               plot_units.fixed(1.0, "files"), ("open_files",), False,
               "the exporter reported no open files",
               _total("open files (all processes)", "open_files"), _none),
    PlotMetric("read", "Reading from storage", "read", plot_units.binary_bytes_per_second,
               ("read_bytes",), True, _IO,
               _total("read (all nodes)", "read_bytes", per_second=True), _none),
    PlotMetric("write", "Writing to storage", "written", plot_units.binary_bytes_per_second,
               ("write_bytes",), True, _IO,
               _total("written (all nodes)", "write_bytes", per_second=True), _none),
    PlotMetric("gpu_utilization", "GPU utilization", "GPU busy", _PERCENT,
               ("gpu_utilization",), False, _GPU,
               _each("gpu_utilization", "GPU", "gpu_uuid"), _none),
    PlotMetric("gpu_memory", "GPU memory", "GPU memory in use", plot_units.binary_bytes,
               ("gpu_memory_used_bytes",), False, _GPU,
               _each("gpu_memory_used_bytes", "GPU", "gpu_uuid"), _none),
)}

# The original's name -> ours. Its series were gauges in its own units (percent, MB, ticks);
# ours are the exporter's base-unit series, so a name maps to the plot of the same quantity.
ALIASES: dict[str, str] = {
    "jobs_cpu_percent": "cpu",  # 100 % per busy CPU there; CPUs busy here
    "jobs_cpu_percent_per_core": "cores",
    "jobs_cpu_time_core": "cores",  # each CPU's cumulative seconds there; its busy % here
    "jobs_cpu_time_total": "cpu_time",
    "jobs_user_time": "cpu_time",  # USER_HZ ticks there; CPU time, user part, here
    "jobs_system_time": "cpu_time",
    "jobs_rss": "memory",  # MB of process RSS there; the job's memory kinds here
    "jobs_thread_count": "threads",
    "jobs_spawned_processes": "threads",  # it counted the cgroup's tasks: live threads
    "jobs_opened_files": "open_files",
    "jobs_read_mb": "read",  # MB read by live processes there; bytes/s read here
    "jobs_write_mb": "write",
    "jobs_read_count": "read",  # operations are not plotted: the bytes read are
    "jobs_write_count": "write",
    "jobs_gpus_used": "gpu_utilization",
    "utilization_gpu": "gpu_utilization",
    "memory_used": "gpu_memory",
}


def resolve_metric(name: str) -> str:
    """Our name for `name` (ours or the original's); UnknownMetric for anything else."""
    if name in METRICS:
        return name
    if name in ALIASES:
        return ALIASES[name]
    raise UnknownMetric(name)


def series_keys(name: str) -> frozenset[str]:
    """The series the plot of `name` (ours or the original's) reads, and so all that a plot
    of a kept job asks Prometheus for; UnknownMetric for anything else."""
    return frozenset(METRICS[resolve_metric(name)].keys)


def metric_curves(metric: PlotMetric, series: JobSeries) -> tuple[Curve, ...]:
    """The metric's curves that have at least one finite point, of readings that can be
    true (readings.py): a figure left out as impossible is not drawn either."""
    return tuple(curve for curve in metric.curves(readings.screened(series))
                 if any(math.isfinite(value) for _, value in curve.points))


def measured_metrics(series: Optional[JobSeries]) -> tuple[str, ...]:
    """The metrics with something to draw for this job, in METRICS order."""
    if series is None:
        return ()
    series = readings.screened(series)  # once, not once per metric
    return tuple(name for name, metric in METRICS.items() if metric_curves(metric, series))
