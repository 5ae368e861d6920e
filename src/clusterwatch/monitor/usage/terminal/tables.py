"""Many jobs at once: a user's jobs as one table (a line a job), and an array's summary.

Pure: documents in, lines out. The table's efficiencies are the documents' own; `parsable`
gives `|`-separated fields with a header for scripts (no padding, no colour; a figure not
measured is empty, never 0; the name, the last field, has `|` and control characters as
spaces, so a line is always one job).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Callable, Optional

from clusterwatch.monitor.core.humanize import duration_text, size_text
from clusterwatch.monitor.usage.rendering.shown_text import one_line, shown
from clusterwatch.monitor.usage.terminal.style import Style

COLUMNS = ("JobID", "State", "Elapsed", "TimeEff", "CPUEff", "MemEff", "GPUEff", "Name")
_WIDTHS = (16, 14, 12, 8, 8, 8, 8, 0)
_SPARK = "·▁▂▃▄▅▆▇█"  # the first: an empty bin
_ASCII_SPARK = "_.:-=+*#@"


def time_efficiency(doc: Mapping[str, Any]) -> Optional[float]:
    limit = doc.get("time_limit_s")
    return doc["elapsed_s"] / limit if isinstance(limit, int) and limit > 0 else None


def gpu_efficiency(doc: Mapping[str, Any]) -> Optional[float]:
    gpus = doc.get("gpus") or []
    return sum(float(g["mean_utilization"]) for g in gpus) / len(gpus) if gpus else None


def job_table(documents: Sequence[Mapping[str, Any]], style: Style, *,
              parsable: bool = False) -> list[str]:
    if parsable:
        return ["|".join(COLUMNS), *(_parsable_row(doc) for doc in documents)]
    lines = [style.bold(_padded(COLUMNS))]
    for doc in documents:
        fractions = (time_efficiency(doc), doc.get("cpu_efficiency"),
                     doc.get("memory_efficiency"), gpu_efficiency(doc))
        cells = [shown(doc["jobid"]), shown(doc["state"])[:14], duration_text(doc["elapsed_s"]),
                 *(_percent(f) for f in fractions), one_line(doc.get("name", ""), 40)]
        padded = [cell.ljust(width) if width else cell for cell, width in zip(cells, _WIDTHS)]
        for column, fraction in enumerate(fractions, start=3):  # colour never moves a column
            padded[column] = style.by_efficiency(padded[column], fraction)
        lines.append(" ".join(padded).rstrip())
    return lines


def array_report(array: Mapping[str, Any], style: Style) -> list[str]:
    """An array's document (analysis/arrays.array_document) in words."""
    summary = array["summary"]
    states = ", ".join(f"{n} {shown(str(state))}" for state, n in summary["states"].items())
    tasks = summary["tasks"]
    lines = [style.bold(f"Array {shown(str(array['array_id']))}")
             + f" of {shown(str(array.get('user') or 'several users'))}: {tasks} "
             f"task{'s' if tasks != 1 else ''} ({states})", ""]
    for label, key, as_size in (("CPU efficiency", "cpu_efficiency", False),
                                ("Memory efficiency", "memory_efficiency", False),
                                ("Peak memory", "memory_peak_bytes", True)):
        found = summary.get(key)
        if not found:
            lines.append(f"  {label:<18} not measured")
            continue
        values = "   ".join(f"{p} {size_text(v) if as_size else _percent(v):>9}"
                            for p, v in found.items())
        lines.append(f"  {label:<18} {values}")
    lines += ["", f"  {'Run time':<18} {_histogram(summary['run_time_s'], duration_text, style)}",
              f"  {'Peak memory':<18} "
              f"{_histogram(summary['memory_peak_histogram'], size_text, style)}"]
    if summary["advice"]:
        lines += ["", style.bold("  Advice for the array")]
        lines += [f"  * {shown(str(advice['message']))}" for advice in summary["advice"]]
    return lines


def _histogram(bins: Sequence[Mapping[str, Any]], text: Callable[[float], str],
               style: Style) -> str:
    """The bins as a row of bars between the lowest and the highest value."""
    if not bins:
        return "no task ended"
    levels = _SPARK if style.fill != "#" else _ASCII_SPARK
    tallest = max(b["count"] for b in bins)
    spark = "".join(levels[max(round(b["count"] / tallest * (len(levels) - 1)), 1)]
                    if b["count"] else levels[0] for b in bins)
    total = sum(b["count"] for b in bins)
    return f"{text(bins[0]['from'])} {spark} {text(bins[-1]['to'])}  ({total} tasks)"


def _percent(fraction: Optional[float]) -> str:
    return "" if fraction is None else f"{100 * fraction:.1f}%"


def _padded(cells: Sequence[str]) -> str:
    return " ".join(cell.ljust(width) if width else cell
                    for cell, width in zip(cells, _WIDTHS)).rstrip()


def _parsable_row(doc: Mapping[str, Any]) -> str:
    fields = [str(doc["jobid"]), str(doc["state"]), str(doc["elapsed_s"]),
              *(_fraction(f) for f in (time_efficiency(doc), doc.get("cpu_efficiency"),
                                       doc.get("memory_efficiency"), gpu_efficiency(doc))),
              one_line(str(doc.get("name", "")).replace("|", " "), 10**6)]
    return "|".join(one_line(f, 10**6) if i < len(fields) - 1 else f
                    for i, f in enumerate(fields))


def _fraction(value: Optional[float]) -> str:
    return "" if value is None else f"{value:.4f}"
