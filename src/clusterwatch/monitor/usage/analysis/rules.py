"""One rule per warning code: a job's record and figures -> a warning, or none.

Each warning carries the figures its rule compared (threshold included), a message that says
what happened and advice that says what to change in the job script. Rules speak only of
figures that were measured: a figure that is None never fires a rule, and a job without
enough samples gets no advice at all (its figures are accounting's, too coarse to judge).
Every ratio here is a fraction; messages format them as percentages.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Callable, Optional, Union

from clusterwatch.monitor.usage.accounting.interface import JobRecord
from clusterwatch.monitor.usage.analysis.figures import UsageSummary
from clusterwatch.monitor.usage.analysis.thresholds import DEFAULTS, GiB, Thresholds

Figure = Union[int, float, str, None]


@dataclass(frozen=True)
class UsageWarning:
    code: str
    message: str
    advice: str
    figures: Mapping[str, Figure]


Rule = Callable[[JobRecord, UsageSummary, Thresholds], Optional[UsageWarning]]


def low_cpu_efficiency(job: JobRecord, s: UsageSummary, t: Thresholds) -> Optional[UsageWarning]:
    if s.cpu_efficiency is None or s.cpu_efficiency >= t.cpu_efficiency_min:
        return None
    busy = "" if s.cores_used_mean is None else (
        f" On average {s.cores_used_mean:.1f} of its {job.cpus_allocated} CPUs were busy.")
    return UsageWarning(
        "low_cpu_efficiency",
        f"The job used {s.cpu_efficiency:.0%} of the CPU time it was allocated "
        f"(elapsed time x {job.cpus_allocated} CPUs).{busy}",
        "Ask for as many CPUs as the program keeps busy, or tell the program how many it has "
        "(e.g. OMP_NUM_THREADS=$SLURM_CPUS_PER_TASK, or the program's threads option). "
        "A serial program needs one CPU.",
        {"cpu_efficiency": s.cpu_efficiency, "threshold": t.cpu_efficiency_min,
         "cpus_allocated": job.cpus_allocated, "cores_used_mean": s.cores_used_mean})


def unbalanced_cores(job: JobRecord, s: UsageSummary, t: Thresholds) -> Optional[UsageWarning]:
    if len(s.core_seconds) < 2:
        return None
    average = sum(c.cpu_s for c in s.core_seconds) / len(s.core_seconds)
    low = [c for c in s.core_seconds if c.cpu_s < t.core_balance_min * average]
    if average <= 0 or not low:
        return None
    lowest = min(c.cpu_s for c in s.core_seconds)
    return UsageWarning(
        "unbalanced_cores",
        f"{len(low)} of the job's {len(s.core_seconds)} CPUs did less than "
        f"{t.core_balance_min:.0%} of the average CPU's work (the least busy: "
        f"{lowest:.0f} s, the average: {average:.0f} s).",
        "Spread the work evenly: give each task or thread a similar share, or ask for fewer "
        "CPUs if some stay idle.",
        {"cores_below": len(low), "cores_measured": len(s.core_seconds),
         "lowest_core_cpu_s": lowest, "average_core_cpu_s": average,
         "threshold": t.core_balance_min})


def bursty_cpu(job: JobRecord, s: UsageSummary, t: Thresholds) -> Optional[UsageWarning]:
    if not s.cores_used_mean or not s.cores_used_max:
        return None
    # A reading above the allocation is a late scrape (two intervals' CPU time in one step),
    # not a burst the job made: the peak is at most what the job was given.
    peak = min(s.cores_used_max, max(job.cpus_allocated, 1))
    ratio = s.cores_used_mean / peak
    if ratio >= t.burst_ratio_min:
        return None
    return UsageWarning(
        "bursty_cpu",
        f"The job's CPU use came in bursts: on average {s.cores_used_mean:.1f} CPUs busy, "
        f"at its peak {peak:.1f} ({ratio:.0%} of the peak on average).",
        "Look for phases that wait (input, output, a serial step) while the allocated CPUs "
        "sit idle; run them as a separate job with fewer CPUs.",
        {"mean_to_peak": ratio, "threshold": t.burst_ratio_min,
         "cores_used_mean": s.cores_used_mean, "cores_used_max": peak})


def memory_over_request(job: JobRecord, s: UsageSummary,
                        t: Thresholds) -> Optional[UsageWarning]:
    # A running job's peak may still come: judged once it has ended.
    if (job.running or s.memory_efficiency is None or s.memory_peak_bytes is None
            or s.memory_requested_bytes is None):
        return None
    unused = s.memory_requested_bytes - s.memory_peak_bytes
    if s.memory_efficiency >= t.memory_efficiency_min or unused < t.memory_unused_min_bytes:
        return None
    suggested = max(math.ceil(s.memory_peak_bytes * 1.2 / GiB), 1)  # a 20 % safety margin
    return UsageWarning(
        "memory_over_request",
        f"The job asked for {_gib(s.memory_requested_bytes)} of memory and used at most "
        f"{_gib(s.memory_peak_bytes)} ({s.memory_efficiency:.0%}).",
        f"Ask for about {suggested} GiB (e.g. --mem={suggested}G): the peak plus a 20 % "
        "margin. Memory asked for and not used is held from other jobs.",
        {"memory_efficiency": s.memory_efficiency, "threshold": t.memory_efficiency_min,
         "memory_requested_bytes": s.memory_requested_bytes,
         "memory_peak_bytes": s.memory_peak_bytes, "unused_min_bytes": t.memory_unused_min_bytes,
         "suggested_bytes": suggested * GiB})


def too_many_threads(job: JobRecord, s: UsageSummary, t: Thresholds) -> Optional[UsageWarning]:
    if s.process_threads_max is None or job.cpus_allocated <= 0:
        return None
    cpus_per_node = math.ceil(job.cpus_allocated / max(job.nodes, 1))
    limit = t.threads_per_cpu_max * cpus_per_node
    if s.process_threads_max <= limit:
        return None
    return UsageWarning(
        "too_many_threads",
        f"A process of the job ran {s.process_threads_max} threads on a node where the job "
        f"had {cpus_per_node} CPUs.",
        "Threads beyond the CPUs only take turns: set the program's thread count to the CPUs "
        "allocated (e.g. OMP_NUM_THREADS=$SLURM_CPUS_PER_TASK).",
        {"process_threads_max": s.process_threads_max, "cpus_per_node": cpus_per_node,
         "threads_per_cpu_max": t.threads_per_cpu_max})


def many_small_files(job: JobRecord, s: UsageSummary, t: Thresholds) -> Optional[UsageWarning]:
    if s.open_files_max is None or s.read_bytes is None or s.write_bytes is None:
        return None
    per_file = (s.read_bytes + s.write_bytes) / max(s.open_files_max, 1)
    if s.open_files_max < t.many_files_min or per_file >= t.bytes_per_file_min:
        return None
    return UsageWarning(
        "many_small_files",
        f"The job had up to {s.open_files_max} files open and moved {_mib(per_file)} per "
        "open file on average.",
        "Many small files are slow on shared filesystems: combine them (an archive, HDF5, a "
        "database) or work on them in node-local scratch.",
        {"open_files_max": s.open_files_max, "bytes_per_file": per_file,
         "many_files_min": t.many_files_min, "bytes_per_file_min": t.bytes_per_file_min})


def no_scratch(job: JobRecord, s: UsageSummary, t: Thresholds) -> Optional[UsageWarning]:
    # Only when the exporter watches scratch paths (None otherwise) and the job did real I/O.
    if s.uses_scratch is not False or s.read_bytes is None or s.write_bytes is None:
        return None
    io = s.read_bytes + s.write_bytes
    if io < t.scratch_io_min_bytes:
        return None
    return UsageWarning(
        "no_scratch",
        f"The job read and wrote {_gib(io)} without using the scratch filesystem.",
        "Put the job's working files on scratch (cd to a scratch directory in the job "
        "script) and copy only the results back.",
        {"io_bytes": io, "scratch_io_min_bytes": t.scratch_io_min_bytes, "uses_scratch": 0})


def idle_gpu(job: JobRecord, s: UsageSummary, t: Thresholds) -> Optional[UsageWarning]:
    idle = [g for g in s.gpus if g.mean_utilization < t.gpu_utilization_min]
    if not idle:
        return None
    lowest = min(g.mean_utilization for g in idle)
    return UsageWarning(
        "idle_gpu",
        f"{len(idle)} of the job's {len(s.gpus)} measured GPUs were busy less than "
        f"{t.gpu_utilization_min:.0%} of the time (the least: {lowest:.0%}).",
        "Ask only for the GPUs the program uses, and check that it runs on them (e.g. that "
        "it was built with GPU support and sees CUDA_VISIBLE_DEVICES).",
        {"gpus_below": len(idle), "gpus_measured": len(s.gpus), "gpus_allocated": job.gpus,
         "lowest_utilization": lowest, "threshold": t.gpu_utilization_min})


RULES: tuple[Rule, ...] = (low_cpu_efficiency, unbalanced_cores, bursty_cpu,
                           memory_over_request, too_many_threads, many_small_files,
                           no_scratch, idle_gpu)
CODES = tuple(rule.__name__ for rule in RULES)


def check(job: JobRecord, summary: UsageSummary,
          thresholds: Thresholds = DEFAULTS) -> tuple[UsageWarning, ...]:
    """The job's warnings in the order of RULES; none without enough samples."""
    if not summary.measured:
        return ()
    found = (rule(job, summary, thresholds) for rule in RULES)
    return tuple(w for w in found if w is not None)


def _gib(size: float) -> str:
    return f"{size / GiB:.1f} GiB"


def _mib(size: float) -> str:
    return f"{size / 1024**2:.1f} MiB"
