"""A usage document said in words: allocated vs used per resource and the kinds of memory in
one sentence. Plain text, no markup, for the PDF, the pages and the email alike (a warning's
figures are figures_text's). What was not measured says so; it is never shown as zero.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

from clusterwatch.monitor.core.humanize import duration_text, size_text
from clusterwatch.monitor.usage.analysis.figures import ACCOUNTING
from clusterwatch.monitor.usage.analysis.summary_json import UsageDocument

NOT_MEASURED = "not measured"


@dataclass(frozen=True)
class SummaryRow:
    resource: str
    allocated: str
    used: str
    efficiency: str  # a percentage, or why there is none


def summary_rows(document: UsageDocument) -> tuple[SummaryRow, ...]:
    return (_cpu(document), _memory(document), _gpus(document), _time(document))


def percent(fraction: Optional[float]) -> str:
    if fraction is None or not math.isfinite(fraction):
        return NOT_MEASURED
    return f"{100 * fraction:.1f} %"


def memory_sentence(document: UsageDocument) -> str:
    """The four things called memory, side by side, each with what it means."""
    kinds = document["memory"]
    return (
        "Memory comes in several kinds. The job's own memory (RSS + shared memory: what it "
        "needed, and what the advice uses) peaked at "
        f"{_size(kinds.get('rss_and_shmem_peak_bytes'))}; "
        "the page cache (file data the kernel keeps and gives back under pressure) at "
        f"{_size(kinds.get('page_cache_peak_bytes'))}; the cgroup's usage (what the limit "
        f"counts, page cache included) at {_size(kinds.get('cgroup_peak_bytes'))}. Slurm's "
        f"MaxRSS is {_size(kinds.get('accounting_max_rss_bytes'))}: under cgroup v2 it is the "
        "cgroup's usage, so it can be far above the job's own memory.")


def _cpu(document: UsageDocument) -> SummaryRow:
    cpus, used_s, elapsed = (document["cpus_allocated"], document["cpu_used_s"],
                             document["elapsed_s"])
    if used_s is None:
        used = NOT_MEASURED
    elif elapsed > 0:
        used = f"{used_s / elapsed:.2f} CPUs on average ({used_s:,.0f} CPU-seconds)"
    else:
        used = f"{used_s:,.0f} CPU-seconds"
    return SummaryRow("CPU", f"{cpus} CPUs" if cpus else "none recorded", used,
                      percent(document["cpu_efficiency"]))


def _memory(document: UsageDocument) -> SummaryRow:
    requested, peak = document["memory_requested_bytes"], document["memory_peak_bytes"]
    if peak is None:
        used = NOT_MEASURED
    elif document["memory_source"] == ACCOUNTING:
        used = f"{size_text(peak)} at peak (Slurm's MaxRSS)"
    else:
        used = f"{size_text(peak)} at peak (RSS + shared memory)"
    return SummaryRow("Memory", size_text(requested) if requested else "none recorded", used,
                      percent(document["memory_efficiency"]))


def _gpus(document: UsageDocument) -> SummaryRow:
    allocated, measured = document["gpus_allocated"], document["gpus"]
    if measured:
        mean = sum(float(g["mean_utilization"]) for g in measured) / len(measured)
        used = f"{len(measured)} measured, busy {100 * mean:.1f} % of the time on average"
        return SummaryRow("GPUs", str(allocated), used, percent(mean))
    return SummaryRow("GPUs", str(allocated), "none asked" if allocated == 0 else NOT_MEASURED,
                      "" if allocated == 0 else NOT_MEASURED)


def _time(document: UsageDocument) -> SummaryRow:
    limit, elapsed = document["time_limit_s"], document["elapsed_s"]
    used = duration_text(elapsed) + (" so far" if document["running"] else "")
    if not limit:
        return SummaryRow("Time", "no limit", used, "")
    return SummaryRow("Time", f"limit {duration_text(limit)}", used,
                      f"{percent(elapsed / limit)} of the limit")


def _size(value: Optional[int]) -> str:
    return NOT_MEASURED if value is None else size_text(value)
