"""Builders of job records and series for the analysis and JSON tests."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from typing import Any, Callable

from clusterwatch.monitor.usage.accounting.interface import JobRecord
from clusterwatch.monitor.usage.metrics.prometheus_api import Series
from clusterwatch.monitor.usage.metrics.series import JobSeries

GiB = 1024**3
MiB = 1024**2
START = datetime(2024, 3, 1, 12, 0, tzinfo=timezone.utc)
HOUR = 3600
STEP = 30.0

JOB = JobRecord(
    jobid="4242", user="alice", account="physics", partition="cpu", state="COMPLETED",
    state_reason="", start=START, end=START + timedelta(hours=1), elapsed_s=HOUR,
    cpus_allocated=2, memory_requested_bytes=4 * GiB, gpus=0, nodes=1, nodelist="node01",
    max_rss_bytes=3 * GiB, total_cpu_s=7000.0, user_cpu_s=6900.0, system_cpu_s=100.0,
    time_limit_s=2 * HOUR, name="good", exit_code="0:0")


def record(**changes: Any) -> JobRecord:
    return dataclasses.replace(JOB, **changes)


def points(value_at: Callable[[float], float], duration: float = HOUR,
           step: float = STEP) -> tuple[tuple[float, float], ...]:
    """One point per step over the job's life, value_at(seconds since start)."""
    t0 = START.timestamp()
    return tuple((t0 + i * step, float(value_at(i * step)))
                 for i in range(int(duration // step) + 1))


def one(value_at: Callable[[float], float], node: str = "node01", **labels: str) -> Series:
    return Series({"instance": node, **labels}, points(value_at))


def job_series(samples: int = 120, **series: Sequence[Series]) -> JobSeries:
    return JobSeries(START.timestamp(), START.timestamp() + HOUR, STEP, samples,
                     {key: tuple(found) for key, found in series.items()})


def good_series(**overrides: Sequence[Series]) -> JobSeries:
    """A two-CPU job that keeps both CPUs busy and uses 3 of its 4 GiB."""
    found: dict[str, Sequence[Series]] = {
        "cpu_seconds": [one(lambda t: 1.95 * t)],
        "cpu_user_seconds": [one(lambda t: 1.9 * t)],
        "cpu_system_seconds": [one(lambda t: 0.05 * t)],
        "core_seconds": [one(lambda t: 0.98 * t, core="0"), one(lambda t: 0.97 * t, core="1")],
        "memory_rss_bytes": [one(lambda t: 3 * GiB)],
        "memory_shmem_bytes": [one(lambda t: 0)],
        "memory_cache_bytes": [one(lambda t: 512 * MiB)],
        "memory_usage_bytes": [one(lambda t: 3.5 * GiB)],
        "threads": [one(lambda t: 3)],
        "process_threads_max": [one(lambda t: 2)],
        "open_files": [one(lambda t: 12)],
        "read_bytes": [one(lambda t: 100 * MiB)],
        "write_bytes": [one(lambda t: 20 * MiB)],
        "uses_scratch": [one(lambda t: 0)],
    }
    found.update(overrides)
    return job_series(**found)
