"""A usage document's figures as the pages say them: a warning's figures as labelled values
with units (percentages for fractions), warning codes as short titles, times and job ids.

Pure: plain values in, plain text out (the templates escape it). A figure that was not
measured says so; it is never shown as zero.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any, Optional

from clusterwatch.monitor.core.humanize import duration_text, size_text
from clusterwatch.monitor.usage.rendering.summary_rows import NOT_MEASURED, percent

# Short titles of the warning codes: the job page's headings and the user page's badges.
WARNING_TITLES = {
    "low_cpu_efficiency": "Low CPU efficiency",
    "unbalanced_cores": "Unbalanced CPUs",
    "bursty_cpu": "Bursty CPU use",
    "memory_over_request": "Memory over-requested",
    "too_many_threads": "Too many threads",
    "many_small_files": "Many small files",
    "no_scratch": "Scratch not used",
    "idle_gpu": "Idle GPU",
}

# The rules' figures (usage/analysis/rules.py) in words. Every `threshold` there is a fraction the
# figure is compared with ("below it warns").
FIGURE_LABELS = {
    "cpu_efficiency": "CPU efficiency (CPU time used / allocated)",
    "threshold": "warns below",
    "cpus_allocated": "CPUs allocated",
    "cores_used_mean": "CPUs busy on average",
    "cores_used_max": "CPUs busy at the peak",
    "cores_below": "CPUs below the threshold",
    "cores_measured": "CPUs measured",
    "lowest_core_cpu_s": "CPU time of the least busy CPU",
    "average_core_cpu_s": "CPU time of the average CPU",
    "mean_to_peak": "average use / peak use",
    "memory_efficiency": "memory efficiency (peak / requested)",
    "memory_requested_bytes": "memory requested",
    "memory_peak_bytes": "memory peak (RSS + shared memory)",
    "unused_min_bytes": "warns only when at least this much is unused",
    "suggested_bytes": "suggested request",
    "process_threads_max": "most threads in one process",
    "cpus_per_node": "CPUs per node",
    "threads_per_cpu_max": "threads per CPU allowed",
    "open_files_max": "most files open at once",
    "bytes_per_file": "data read and written per open file",
    "many_files_min": "warns from this many open files",
    "bytes_per_file_min": "and below this much data per file",
    "io_bytes": "data read and written",
    "scratch_io_min_bytes": "warns from this much data",
    "uses_scratch": "used the scratch filesystem",
    "gpus_below": "GPUs below the threshold",
    "gpus_measured": "GPUs measured",
    "gpus_allocated": "GPUs allocated",
    "lowest_utilization": "utilization of the least busy GPU",
}
FRACTIONS = frozenset({"cpu_efficiency", "memory_efficiency", "mean_to_peak",
                       "lowest_utilization", "threshold"})
YES_NO = frozenset({"uses_scratch"})
MEANS = frozenset({"cores_used_mean", "cores_used_max"})  # always with their decimals
_JOBID_PARTS = re.compile(r"[_+]")


def warning_title(code: str) -> str:
    return WARNING_TITLES.get(code, code.replace("_", " ").capitalize())


def figure_label(key: str) -> str:
    return FIGURE_LABELS.get(key, key.replace("_", " "))


def figure_value(key: str, value: Any) -> str:
    """One figure with its unit: bytes in binary units, seconds as a duration, fractions as
    percentages, counts with thousands separators."""
    if value is None:
        return NOT_MEASURED
    if isinstance(value, bool) or key in YES_NO:
        return "yes" if value else "no"
    if not isinstance(value, (int, float)):
        return str(value)
    if not math.isfinite(value):
        return NOT_MEASURED
    if key.endswith("_bytes"):
        return size_text(value)
    if key.endswith("_s"):
        return duration_text(value)
    if key in FRACTIONS:
        return percent(value)
    if key not in MEANS and (isinstance(value, int) or float(value).is_integer()):
        return f"{int(value):,}"
    return f"{value:,.2f}"


def figure_lines(figures: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """(label, value) of each figure a rule compared, in the rule's order."""
    return tuple((figure_label(key), figure_value(key, value)) for key, value in figures.items())


def moment(text: Optional[str]) -> Optional[datetime]:
    """An ISO 8601 time of the document; None when absent or unreadable."""
    if not text:
        return None
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def moment_text(text: Optional[str], missing: str = "—", *, zone: bool = True) -> str:
    """`2026-11-29 13:30 UTC` (without ` UTC` where a heading says it), or `missing`."""
    parsed = moment(text)
    if parsed is None:
        return missing
    return parsed.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M" + (" UTC" if zone else ""))


def jobid_order(jobid: str) -> tuple[int, ...]:
    """1234 < 1234_7 < 1234_10 < 1235: numeric, not the text's order."""
    try:
        return tuple(int(part) for part in _JOBID_PARTS.split(jobid))
    except ValueError:
        return (-1,)
