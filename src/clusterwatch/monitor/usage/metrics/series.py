"""The job exporter's raw series for one job over its life, read back with range queries.

No recording rule is needed: each series is queried by its exporter name and the job's
`jobid` label. Counters are read as they are (the cgroup counters start with the job, so
the last value is the job's total); gauges whose peak matters are read as
`max_over_time(...[window])`, so a peak between two evaluation points is not lost when a
long job is read at a coarse step. A series Prometheus does not have is absent from
`JobSeries` ("not measured"), never a series of zeros.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Set
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Optional

from clusterwatch.http_client import request
from clusterwatch.monitor.usage.metrics.prometheus_api import (
    HttpRequest,
    PrometheusError,
    Series,
    query_instant,
    query_range,
)

DEFAULT_SCRAPE_INTERVAL_S = 30.0
DEFAULT_MAX_POINTS = 1000  # per series: a 7-day job at 30 s would be 20,160
DEFAULT_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class SeriesSpec:
    key: str  # the name analysis reads it by
    metric: str  # the exporter's metric name (docs/jobs.md)
    read: str  # "value": the sample at each step; "peak": the highest within each step


SPECS = (
    SeriesSpec("cpu_seconds", "jobs_cpu_seconds_total", "value"),
    SeriesSpec("cpu_user_seconds", "jobs_cpu_user_seconds_total", "value"),
    SeriesSpec("cpu_system_seconds", "jobs_cpu_system_seconds_total", "value"),
    SeriesSpec("core_seconds", "jobs_cpu_core_seconds_total", "value"),
    SeriesSpec("memory_rss_bytes", "jobs_memory_rss_bytes", "peak"),
    SeriesSpec("memory_shmem_bytes", "jobs_memory_shmem_bytes", "peak"),
    SeriesSpec("memory_cache_bytes", "jobs_memory_cache_bytes", "peak"),
    SeriesSpec("memory_usage_bytes", "jobs_memory_usage_bytes", "peak"),
    SeriesSpec("memory_limit_bytes", "jobs_memory_limit_bytes", "value"),
    SeriesSpec("memory_oom_kills", "jobs_memory_oom_kills_total", "value"),
    SeriesSpec("threads", "jobs_threads", "peak"),
    SeriesSpec("process_threads_max", "jobs_process_threads_max", "peak"),
    SeriesSpec("open_files", "jobs_open_files", "peak"),
    SeriesSpec("read_bytes", "jobs_read_bytes_total", "value"),
    SeriesSpec("write_bytes", "jobs_write_bytes_total", "value"),
    SeriesSpec("uses_scratch", "jobs_uses_scratch", "peak"),
    SeriesSpec("gpu_utilization", "jobs_gpu_utilization_ratio", "value"),
    SeriesSpec("gpu_memory_used_bytes", "jobs_gpu_memory_used_bytes", "peak"),
)


@dataclass(frozen=True)
class JobSeries:
    """What Prometheus has of one job. `samples`: scrapes of the job on its busiest node."""

    start: float
    end: float
    step: float
    samples: int
    series: Mapping[str, tuple[Series, ...]]
    # Keys taken out of `series` because their readings cannot be true -> why, in a few
    # words (usage/analysis/readings.py): not measured, and said so.
    rejected: Mapping[str, str] = field(default_factory=dict)

    def get(self, key: str) -> Optional[tuple[Series, ...]]:
        """The series under `key`, or None when not measured (absent or without points)."""
        found = tuple(s for s in self.series.get(key, ()) if s.points)
        return found or None

    def only(self, keys: Set[str]) -> JobSeries:
        """These series alone, on the same grid: what one plot reads."""
        return replace(self, series={k: v for k, v in self.series.items() if k in keys})


def choose_step(duration_s: float, scrape_interval_s: float = DEFAULT_SCRAPE_INTERVAL_S,
                max_points: int = DEFAULT_MAX_POINTS) -> float:
    """Whole seconds between evaluation points: never finer than a scrape, and at most
    `max_points` points over the duration."""
    if max_points < 2:
        raise ValueError("max_points must be at least 2")
    needed = math.ceil(max(duration_s, 0.0) / (max_points - 1))
    return float(max(math.ceil(scrape_interval_s), needed, 1))


def selector(metric: str, jobid: str) -> str:
    escaped = jobid.replace("\\", "\\\\").replace('"', '\\"')
    return f'{metric}{{jobid="{escaped}"}}'


def fetch_job_series(base_url: str, jobid: str, start: datetime, end: datetime, *,
                     scrape_interval_s: float = DEFAULT_SCRAPE_INTERVAL_S,
                     max_points: int = DEFAULT_MAX_POINTS,
                     timeout_s: float = DEFAULT_TIMEOUT_S,
                     http: HttpRequest = request,
                     keys: Optional[Set[str]] = None) -> JobSeries:
    """The series of SPECS for the job between `start` and `end` (for a running job: now):
    every one, or those whose key is in `keys` (one plot reads one to four of the 18; each is
    a range query). The scrape count (`samples`) is always read: it tells a job whose series
    retention dropped from one that never had the ones asked for.

    PrometheusError when Prometheus is down, slow or answers garbage: the caller says so
    instead of showing a job that used nothing. The queries share one deadline, `timeout_s`:
    up to 19 of them, each allowed the whole, would hold a page past the server's worker timeout.
    """
    try:
        chosen = SPECS if keys is None else tuple(s for s in SPECS if s.key in keys)
        return _fetch(base_url, jobid, start, end, scrape_interval_s, max_points,
                      _Deadline(timeout_s), http, chosen)
    except PrometheusError as exc:
        if exc.kind != "timeout":
            raise
        raise PrometheusError("timeout", f"Prometheus gave no answer within {timeout_s:g} s"
                              ) from None


class _Deadline:
    def __init__(self, seconds: float) -> None:
        self._end = time.monotonic() + seconds

    def left(self) -> float:
        """Seconds left for the next query; PrometheusError once there are none."""
        left = self._end - time.monotonic()
        if left <= 0:
            raise PrometheusError("timeout", "no time left")
        return left


def _fetch(base_url: str, jobid: str, start: datetime, end: datetime, scrape_interval_s: float,
           max_points: int, deadline: _Deadline, http: HttpRequest,
           specs: tuple[SeriesSpec, ...]) -> JobSeries:
    first, last = start.timestamp(), max(end.timestamp(), start.timestamp())
    step = choose_step(last - first, scrape_interval_s, max_points)
    # The grid ends exactly at the job's end, so the counters' last point is their total.
    grid_start = last - step * math.floor((last - first) / step)
    window = f"[{math.ceil(step + scrape_interval_s)}s]"
    found: dict[str, tuple[Series, ...]] = {}
    for spec in specs:
        promql = selector(spec.metric, jobid)
        if spec.read == "peak":
            promql = f"max_over_time({promql}{window})"
        found[spec.key] = tuple(query_range(base_url, promql, grid_start, last, step,
                                            deadline.left(), http))
    lifetime = f"[{math.ceil(last - first + scrape_interval_s)}s]"
    counts = query_instant(base_url, f"count_over_time({selector('jobs_info', jobid)}{lifetime})",
                           last, deadline.left(), http)
    samples = max((round(s.points[-1][1]) for s in counts if s.points), default=0)
    return JobSeries(grid_start, last, step, samples, found)
