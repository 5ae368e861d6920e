"""The rules of the alerts while a job runs (usage_watch): a running job's accounting record and
the figures read for it over the last `idle_for_s` -> the rules it breaks now.

Pure: the figures come from three queries over every running job at once
(metrics/running_figures.py), the thresholds from the `[running]` table
(analysis/thresholds.py). A rule speaks only of what was measured: a figure that is missing,
NaN, infinite or negative breaks no rule, and no rule judges a job younger than the window
(its figures would cover less than the window says). Each alert carries the figures its rule
compared and advice a researcher can act on now, while the job still holds its allocation.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Callable, Optional

from clusterwatch.monitor.usage.accounting.interface import JobRecord
from clusterwatch.monitor.usage.analysis.rules import Figure
from clusterwatch.monitor.usage.analysis.thresholds import (
    RUNNING_DEFAULTS,
    GiB,
    RunningThresholds,
)
from clusterwatch.monitor.usage.metrics.running_figures import RunningFigures

MAX_LIMIT_BYTES = 2**60  # above any node's memory: cgroup v1's "no limit" (about 2^63) is none


@dataclass(frozen=True)
class RunningAlert:
    code: str
    message: str
    advice: str
    figures: Mapping[str, Figure]


RunningRule = Callable[[JobRecord, RunningFigures, RunningThresholds], Optional[RunningAlert]]


def gpu_idle(job: JobRecord, f: RunningFigures, t: RunningThresholds) -> Optional[RunningAlert]:
    if job.gpus <= 0 or not _judged(job, t):
        return None
    measured = {gpu: u for gpu, u in f.gpu_peak_utilization.items() if _measured(u)}
    idle = sorted(gpu for gpu, u in measured.items() if u <= t.gpu_idle_utilization_max)
    if not idle:
        return None
    window = _hours(t.idle_for_s)
    busy = max(0, job.gpus - len(idle))
    if len(idle) >= job.gpus:
        message = (f"None of the job's {job.gpus} GPU{_s(job.gpus)} has been busy in the "
                   f"last {window} (the highest utilisation: "
                   f"{max(measured[g] for g in idle):.0%}).")
        advice = ("Cancel the job (scancel " + job.jobid + ") and resubmit it with --gpus=0, "
                  "or check that the program runs on the GPU (built with GPU support, sees "
                  "CUDA_VISIBLE_DEVICES): an idle GPU is held from everyone else.")
    else:
        message = (f"{len(idle)} of the job's {job.gpus} GPUs have not been busy in the last "
                   f"{window}.")
        advice = (f"Cancel the job and resubmit it with --gpus={busy}, or make the program "
                  "use every GPU it asks for.")
    return RunningAlert("gpu_idle", message, advice, {
        "gpus_allocated": job.gpus, "gpus_idle": len(idle), "gpus_measured": len(measured),
        "highest_utilization": max(measured[g] for g in idle),
        "threshold": t.gpu_idle_utilization_max, "window_s": t.idle_for_s})


def cpu_idle(job: JobRecord, f: RunningFigures, t: RunningThresholds) -> Optional[RunningAlert]:
    busy = f.cores_busy
    if (job.cpus_allocated < t.cpu_min_cpus or not _judged(job, t) or busy is None
            or not _measured(busy)):
        return None
    efficiency = min(busy / job.cpus_allocated, 1.0)
    if efficiency >= t.cpu_efficiency_min:
        return None
    suggested = max(math.ceil(busy), 1)
    return RunningAlert("cpu_idle", (
        f"In the last {_hours(t.idle_for_s)} the job kept {busy:.1f} of its "
        f"{job.cpus_allocated} CPUs busy on average ({efficiency:.0%})."), (
        f"If the program cannot use more, cancel the job and resubmit it with about "
        f"{suggested} CPU{_s(suggested)} (e.g. --cpus-per-task={suggested}); otherwise tell "
        "it how many it has (e.g. OMP_NUM_THREADS=$SLURM_CPUS_PER_TASK)."), {
        "cpu_efficiency": efficiency, "threshold": t.cpu_efficiency_min,
        "cores_busy": busy, "cpus_allocated": job.cpus_allocated, "window_s": t.idle_for_s})


def memory_near_limit(job: JobRecord, f: RunningFigures,
                      t: RunningThresholds) -> Optional[RunningAlert]:
    # Not held to the window: an out-of-memory kill comes however young the job is.
    worst: Optional[tuple[float, str, float, float]] = None
    for node, memory in sorted(f.memory.items()):
        used, limit = memory.used_bytes, memory.limit_bytes
        if used is None or limit is None or not _measured(used) or not _measured(limit):
            continue
        if limit <= 0 or limit >= MAX_LIMIT_BYTES:
            continue  # no limit: nothing to be killed at
        ratio = used / limit
        if worst is None or ratio > worst[0]:
            worst = (ratio, node, used, limit)
    if worst is None or worst[0] < t.memory_near_limit:
        return None
    ratio, node, used, limit = worst
    on = f" on {node}" if len(f.memory) > 1 and node else ""
    suggested = max(math.ceil(limit * 1.5 / GiB), 1)
    return RunningAlert("memory_near_limit", (
        f"The job holds {_gib(used)} of memory{on}, {ratio:.0%} of its limit of "
        f"{_gib(limit)}."), (
        f"Your job will be killed when it reaches {_gib(limit)}{on}. If it still needs more, "
        "let it save its work, then resubmit it with more memory (e.g. "
        f"--mem={suggested}G); or make it hold less."), {
        "memory_used_bytes": used, "memory_limit_bytes": limit, "ratio": ratio,
        "threshold": t.memory_near_limit, "node": node})


RULES: tuple[RunningRule, ...] = (gpu_idle, cpu_idle, memory_near_limit)
CODES = tuple(rule.__name__ for rule in RULES)


def check_running(job: JobRecord, figures: RunningFigures,
                  thresholds: RunningThresholds = RUNNING_DEFAULTS) -> tuple[RunningAlert, ...]:
    """The rules `job` breaks now, in the order of RULES; none for a job not running."""
    if job.state != "RUNNING":
        return ()
    found = (rule(job, figures, thresholds) for rule in RULES)
    return tuple(alert for alert in found if alert is not None)


def _judged(job: JobRecord, t: RunningThresholds) -> bool:
    return job.elapsed_s >= t.idle_for_s


def _measured(value: float) -> bool:
    return math.isfinite(value) and value >= 0


def _hours(seconds: int) -> str:
    if seconds % 3600 == 0:
        hours = seconds // 3600
        return "hour" if hours == 1 else f"{hours} hours"
    if seconds % 60 == 0:
        minutes = seconds // 60
        return "minute" if minutes == 1 else f"{minutes} minutes"
    return f"{seconds} seconds"


def _gib(size: float) -> str:
    gib = size / GiB
    return f"{gib:.0f} GiB" if abs(gib - round(gib)) < 0.05 else f"{gib:.1f} GiB"


def _s(count: int) -> str:
    return "" if count == 1 else "s"


def breaking(jobs: Iterable[JobRecord], figures: Mapping[str, RunningFigures],
             thresholds: RunningThresholds = RUNNING_DEFAULTS
             ) -> list[tuple[JobRecord, tuple[RunningAlert, ...]]]:
    """Each running job that breaks a rule now, with its alerts. `figures` are keyed by the
    exporter's `jobid` label, the job's own number (JobRecord.jobid_raw) where accounting
    gives it; a job Prometheus has nothing of breaks no rule."""
    found = []
    for job in jobs:
        measured = figures.get(job.jobid_raw or job.jobid)
        if measured is None:
            continue
        alerts = check_running(job, measured, thresholds)
        if alerts:
            found.append((job, alerts))
    return found
