"""The user page's table: one row per job with allocated and used side by side, sorted by
any column, filtered by state and start, cut into pages.

Pure: the user's documents in, rows of plain text out. A figure that was not measured sorts
after every measured one in both orders, so "least efficient first" never starts with jobs
that were not measured.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Callable, Optional

from clusterwatch.monitor.core.humanize import duration_text, size_text
from clusterwatch.monitor.usage.analysis.summary_json import UsageDocument
from clusterwatch.monitor.usage.rendering.figures_text import (
    jobid_order,
    moment,
    moment_text,
    warning_title,
)
from clusterwatch.monitor.usage.rendering.summary_rows import percent

PAGE_SIZE = 100
DASH = "—"


@dataclass(frozen=True)
class Column:
    key: str  # the ?sort= value
    heading: str
    first_order: str  # the order of a first click: "asc" or "desc"
    value: Callable[[UsageDocument], Any]  # what it sorts by; None: not measured
    numeric: bool = True


def _finite(figure: Optional[float]) -> Optional[float]:
    return figure if figure is not None and math.isfinite(figure) else None


def _gpu_mean(d: UsageDocument) -> Optional[float]:
    gpus = d["gpus"]
    return sum(float(g["mean_utilization"]) for g in gpus) / len(gpus) if gpus else None


COLUMNS: tuple[Column, ...] = (
    Column("jobid", "Job", "desc", lambda d: jobid_order(d["jobid"])),
    Column("name", "Name", "asc", lambda d: d.get("name", "").casefold(), numeric=False),
    Column("state", "State", "asc", lambda d: d["state"], numeric=False),
    Column("start", "Started (UTC)", "desc", lambda d: d["start"], numeric=False),
    Column("cpus", "CPUs", "desc", lambda d: d["cpus_allocated"]),
    Column("cpu_efficiency", "CPU eff.", "asc", lambda d: _finite(d["cpu_efficiency"])),
    Column("memory_requested", "Memory asked", "desc", lambda d: d["memory_requested_bytes"]),
    Column("memory_peak", "Memory peak", "desc", lambda d: d["memory_peak_bytes"]),
    Column("memory_efficiency", "Memory eff.", "asc", lambda d: _finite(d["memory_efficiency"])),
    Column("gpus", "GPUs", "desc", lambda d: (d["gpus_allocated"], _gpu_mean(d) or 0.0)),
    Column("time_limit", "Time limit", "desc", lambda d: d["time_limit_s"]),
    Column("elapsed", "Elapsed", "desc", lambda d: d["elapsed_s"]),
    Column("warnings", "Warnings", "desc", lambda d: len(d["warnings"]), numeric=False),
)
BY_KEY = {column.key: column for column in COLUMNS}
DEFAULT_SORT, DEFAULT_ORDER = "start", "desc"


@dataclass(frozen=True)
class JobRow:
    jobid: str
    name: str
    state: str
    running: bool
    start: str
    cells: tuple[str, ...]  # CPUs .. elapsed, in COLUMNS order
    judged: bool  # the rules saw the exporter's figures (else no warning means nothing)
    warnings: tuple[tuple[str, str], ...]  # (code, title)


def job_row(d: UsageDocument) -> JobRow:
    limit, mean = d["time_limit_s"], _gpu_mean(d)
    gpus = str(d["gpus_allocated"]) + ("" if mean is None else f" ({percent(mean)} busy)")
    return JobRow(
        jobid=d["jobid"], name=d.get("name", ""), state=d["state"], running=d["running"],
        start=moment_text(d["start"], "not started", zone=False),  # the heading says UTC
        cells=(str(d["cpus_allocated"]), _percent(d["cpu_efficiency"]),
               _size(d["memory_requested_bytes"]), _size(d["memory_peak_bytes"]),
               _percent(d["memory_efficiency"]), gpus,
               duration_text(limit) if limit else "none",
               duration_text(d["elapsed_s"]) + (" so far" if d["running"] else "")),
        judged=d["measured"],
        warnings=tuple((w["code"], warning_title(w["code"])) for w in d["warnings"]))


def sort_documents(documents: Sequence[UsageDocument], key: str,
                   order: str) -> list[UsageDocument]:
    """Sorted by column `key`; unmeasured figures last in either order; ties keep the order
    they came in (user_jobs: newest first), as Python's sort is stable, reversed or not."""
    value = BY_KEY[key].value
    measured = [(value(d), d) for d in documents]
    present = [pair for pair in measured if pair[0] is not None]
    present.sort(key=lambda pair: pair[0], reverse=(order == "desc"))
    return [d for _, d in present] + [d for v, d in measured if v is None]


def in_window(documents: Sequence[UsageDocument], states: Collection[str],
              until: Optional[datetime]) -> list[UsageDocument]:
    """The jobs in one of `states` (all when empty) that started before `until` (if any)."""
    kept = []
    for d in documents:
        if states and d["state"] not in states:
            continue
        if until is not None:
            started = moment(d["start"])
            if started is None or started >= until:
                continue
        kept.append(d)
    return kept


def state_counts(documents: Sequence[UsageDocument]) -> list[tuple[str, int]]:
    """Each state of the jobs with how many, most frequent first."""
    counts = Counter(d["state"] for d in documents)
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


@dataclass(frozen=True)
class Page:
    number: int
    pages: int
    first: int  # 1-based position of the first row shown; 0 when none
    last: int
    total: int


def page_of(total: int, asked: int, size: int = PAGE_SIZE) -> Page:
    """Page `asked` (1-based) of `total` rows; past the last page shows the last one."""
    pages = max(1, math.ceil(total / size))
    number = min(max(asked, 1), pages)
    first = (number - 1) * size
    last = min(first + size, total)
    return Page(number, pages, first + 1 if total else 0, last, total)


def _percent(fraction: Optional[float]) -> str:
    text = percent(fraction)
    return DASH if text == percent(None) else text


def _size(value: Optional[int]) -> str:
    return DASH if value is None else size_text(value)
