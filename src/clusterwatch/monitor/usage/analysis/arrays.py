"""An array job as a whole: its tasks' documents -> one summary with advice for the array.

Pure. An array of 500 tasks is one decision for its owner (what to ask for next time), so
the figures are distributions over the tasks, not 500 reports:

- tasks by state; a line of tasks not started (`123_[5-100%4]`) counts as the tasks it names;
- CPU and memory efficiency as percentiles over the tasks that have the figure
  (nearest-rank: the p-th percentile is the smallest value with at least p % of the tasks at
  or below it, so it is always some task's own figure);
- run time and peak memory of the ended tasks as small histograms (HISTOGRAM_BINS equal
  bins between the smallest and the largest);
- advice computed for the array: memory from the 90th percentile of the peaks plus a 20 %
  margin (the end-of-job rule's margin), CPUs from the median busy cores, time from the
  longest task plus 20 %. Each only when the figures say so and the saving is worth a change
  (the end-of-job thresholds decide, as for one job).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional

from clusterwatch.monitor.usage.analysis.thresholds import DEFAULTS, GiB, MiB, Thresholds

HISTOGRAM_BINS = 8
PERCENTILES = (10, 50, 90)
MARGIN = 1.2  # the end-of-job memory rule's 20 %
_RANGE = re.compile(r"[0-9]+_\[([0-9,:-]+)(?:%[0-9]+)?\]")


@dataclass(frozen=True)
class Bin:
    low: float
    high: float
    count: int


@dataclass(frozen=True)
class Advice:
    code: str  # "array_memory", "array_cpus", "array_time"
    message: str
    option: str  # the sbatch option to use, e.g. "--mem=2500M"


@dataclass(frozen=True)
class ArraySummary:
    array_id: str
    tasks: int
    states: Mapping[str, int]  # state -> tasks, largest first
    cpu_efficiency: Mapping[int, float]  # percentile -> value; empty: no task has it
    memory_efficiency: Mapping[int, float]
    memory_peak_bytes: Mapping[int, float]
    run_time: tuple[Bin, ...]  # seconds; empty: no task has ended
    memory_peak: tuple[Bin, ...]  # bytes; empty: no peak measured
    advice: tuple[Advice, ...]


def task_count(jobid: str) -> int:
    """How many tasks a listed id stands for: 1, or those a line of tasks not started names
    (`123_[1-3,7]` is 4; a step `1-9:2` counts 1, 3, 5, 7, 9)."""
    found = _RANGE.fullmatch(jobid)
    if found is None:
        return 1
    total = 0
    for part in found.group(1).split(","):
        span, _colon, step = part.partition(":")
        low, _dash, high = span.partition("-")
        if not low.isdigit() or (high and not high.isdigit()) or (step and not step.isdigit()):
            return 1  # a form not known: one line, one task, rather than a guess
        first, last, by = int(low), int(high or low), int(step or 1) or 1
        total += max((last - first) // by + 1, 0)
    return max(total, 1)


def summarise(array_id: str, tasks: Sequence[Mapping[str, Any]],
              thresholds: Thresholds = DEFAULTS) -> ArraySummary:
    """The summary of the array `array_id` from its tasks' documents (summary_json shape)."""
    states: Counter[str] = Counter()
    for task in tasks:
        states[str(task.get("state") or "UNKNOWN")] += task_count(str(task.get("jobid", "")))
    ended = [t for t in tasks if not t.get("running")]
    cpu = _figures(ended, "cpu_efficiency")
    memory = _figures(ended, "memory_efficiency")
    peaks = _figures(ended, "memory_peak_bytes")
    run_times = [float(t["elapsed_s"]) for t in ended
                 if isinstance(t.get("elapsed_s"), (int, float)) and t.get("start")]
    return ArraySummary(
        array_id=array_id, tasks=sum(states.values()),
        states=dict(sorted(states.items(), key=lambda item: (-item[1], item[0]))),
        cpu_efficiency=_percentiles(cpu), memory_efficiency=_percentiles(memory),
        memory_peak_bytes=_percentiles(peaks),
        run_time=histogram(run_times), memory_peak=histogram(peaks),
        advice=tuple(a for a in (_memory_advice(ended, peaks, thresholds),
                                 _cpu_advice(ended, thresholds),
                                 _time_advice(ended, run_times)) if a is not None))


def percentile(values: Sequence[float], p: int) -> float:
    """Nearest-rank percentile of a non-empty sequence."""
    ordered = sorted(values)
    rank = max(math.ceil(p / 100 * len(ordered)), 1)
    return ordered[rank - 1]


def histogram(values: Sequence[float], bins: int = HISTOGRAM_BINS) -> tuple[Bin, ...]:
    """`bins` equal bins from the smallest value to the largest (one bin when all are equal);
    the last bin holds the largest."""
    if not values:
        return ()
    low, high = min(values), max(values)
    if high == low:
        return (Bin(low, high, len(values)),)
    width = (high - low) / bins
    counts = [0] * bins
    for value in values:
        counts[min(int((value - low) / width), bins - 1)] += 1
    return tuple(Bin(low + i * width, low + (i + 1) * width, n) for i, n in enumerate(counts))


def summary_document(summary: ArraySummary) -> dict[str, Any]:
    """Plain JSON of the summary (fractions stay fractions, sizes bytes, times seconds)."""
    def bins(found: tuple[Bin, ...]) -> list[dict[str, float]]:
        return [{"from": b.low, "to": b.high, "count": b.count} for b in found]

    def pcts(found: Mapping[int, float]) -> Optional[dict[str, float]]:
        return {f"p{p}": v for p, v in found.items()} or None

    return {"tasks": summary.tasks, "states": dict(summary.states),
            "cpu_efficiency": pcts(summary.cpu_efficiency),
            "memory_efficiency": pcts(summary.memory_efficiency),
            "memory_peak_bytes": pcts(summary.memory_peak_bytes),
            "run_time_s": bins(summary.run_time),
            "memory_peak_histogram": bins(summary.memory_peak),
            "advice": [{"code": a.code, "message": a.message, "option": a.option}
                       for a in summary.advice]}


def array_document(array_id: str, tasks: Sequence[Mapping[str, Any]],
                   thresholds: Thresholds = DEFAULTS) -> dict[str, Any]:
    """The answer of `GET /api/v1/arrays/<id>/usage` and `clusterwatch usage --json ID`:
    the array's id and user, its summary, and each task's document in task order."""
    users = sorted({str(t.get("user", "")) for t in tasks})
    return {"array_id": array_id, "user": users[0] if len(users) == 1 else None,
            "summary": summary_document(summarise(array_id, tasks, thresholds)),
            "tasks": [dict(t) for t in tasks]}


def _figures(tasks: Sequence[Mapping[str, Any]], key: str) -> list[float]:
    return [float(t[key]) for t in tasks
            if isinstance(t.get(key), (int, float)) and math.isfinite(float(t[key]))]


def _percentiles(values: Sequence[float]) -> dict[int, float]:
    return {p: percentile(values, p) for p in PERCENTILES} if values else {}


def _usual(tasks: Sequence[Mapping[str, Any]], key: str) -> Optional[float]:
    """The value most tasks have (arrays ask the same of every task); None when none has it."""
    found = Counter(t[key] for t in tasks if isinstance(t.get(key), (int, float)) and t[key])
    return float(found.most_common(1)[0][0]) if found else None


def _memory_advice(tasks: Sequence[Mapping[str, Any]], peaks: Sequence[float],
                   t: Thresholds) -> Optional[Advice]:
    requested = _usual(tasks, "memory_requested_bytes")
    if requested is None or len(peaks) < 2:
        return None
    high = percentile(peaks, 90)
    suggested_mib = max(math.ceil(high * MARGIN / MiB / 100) * 100, 100)
    unused = requested - high
    if high / requested >= t.memory_efficiency_min or unused < t.memory_unused_min_bytes:
        return None
    return Advice("array_memory",
                  f"90 % of the tasks peak under {_size(high)} of the {_size(requested)} each "
                  f"asked for: ask --mem={suggested_mib}M (that peak plus 20 %).",
                  f"--mem={suggested_mib}M")


def _cpu_advice(tasks: Sequence[Mapping[str, Any]], t: Thresholds) -> Optional[Advice]:
    cpus = _usual(tasks, "cpus_allocated")
    busy = [float(x["cpu_efficiency"]) * float(x["cpus_allocated"]) for x in tasks
            if isinstance(x.get("cpu_efficiency"), (int, float))
            and isinstance(x.get("cpus_allocated"), int) and x["cpus_allocated"] > 0]
    if cpus is None or cpus < 2 or len(busy) < 2:
        return None
    median = percentile(busy, 50)
    if median / cpus >= t.cpu_efficiency_min:
        return None
    suggested = max(math.ceil(median), 1)
    if suggested >= cpus:
        return None
    return Advice("array_cpus",
                  f"Half of the tasks keep at most {median:.1f} of their {cpus:.0f} CPUs "
                  f"busy: ask --cpus-per-task={suggested}.", f"--cpus-per-task={suggested}")


def _time_advice(tasks: Sequence[Mapping[str, Any]],
                 run_times: Sequence[float]) -> Optional[Advice]:
    limit = _usual(tasks, "time_limit_s")
    if limit is None or len(run_times) < 2:
        return None
    longest = max(run_times)
    suggested = math.ceil(longest * MARGIN / 60) * 60  # whole minutes
    if suggested * 2 > limit:  # within half the limit: not worth a change
        return None
    return Advice("array_time",
                  f"The longest task ran {_clock(longest)} of its {_clock(limit)} limit: ask "
                  f"--time={_clock(suggested)} (the longest plus 20 %); shorter limits start "
                  "sooner.", f"--time={_clock(suggested)}")


def _size(size: float) -> str:
    return f"{size / GiB:.1f} GiB" if size >= GiB else f"{size / MiB:.0f} MiB"


def _clock(seconds: float) -> str:
    whole = round(seconds)
    days, rest = divmod(whole, 86400)
    text = f"{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"
    return f"{days}-{text}" if days else text
