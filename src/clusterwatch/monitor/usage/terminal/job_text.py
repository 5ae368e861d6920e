"""One job's usage document as a terminal report: asked vs used with bars, each node's part,
the warnings with their figures and the change to make, and where the report lives.

Pure: a document in, lines out. The rows are summary_rows' (the PDF's and the pages'), the
warnings' words are the document's own, so the terminal says what every other output says.
Every text that came from accounting or the job's owner goes through `shown` (a job name
holding an escape sequence would otherwise drive the terminal), and so does every other text
of the document (`_said`): the monitor's words, its warnings' codes, figures and notes, come
over the network, and a monitor (or whoever answers for it on plain http) must not drive the
terminal either.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any, Optional, cast

from clusterwatch.monitor.core.humanize import duration_text, size_text
from clusterwatch.monitor.usage.analysis.summary_json import UsageDocument
from clusterwatch.monitor.usage.rendering.figures_text import (
    figure_lines,
    moment_text,
    warning_title,
)
from clusterwatch.monitor.usage.rendering.shown_text import one_line, shown
from clusterwatch.monitor.usage.rendering.summary_rows import summary_rows
from clusterwatch.monitor.usage.terminal.style import Style

BAR_WIDTH = 30
WIDTH = 100  # the longest line a sentence is wrapped to
SAID_LIMIT = 2000  # characters of one warning's sentence, a note or a figure
# Which rows' bars are coloured by efficiency: CPU, memory and GPUs, not the time used.
_JUDGED = (True, True, True, False)


def job_report(document: Mapping[str, Any], style: Style, *,
               report_url: Optional[str] = None) -> list[str]:
    doc = cast(UsageDocument, document)
    lines = [style.bold(f"Job {shown(doc['jobid'])}") + f"  {shown(doc['name'])!s}",
             f"  user {shown(doc['user'])}, account {shown(doc['account'])}, partition "
             f"{shown(doc['partition'])}, {doc['nodes']} node{'s' if doc['nodes'] != 1 else ''}",
             f"  {_state(doc, style)}, started {moment_text(doc['start'])}, "
             f"{'running' if doc['running'] else 'ended ' + moment_text(doc['end'])}", ""]
    for row, fraction, judged in zip(summary_rows(doc), _fractions(doc), _JUDGED):
        if row.resource == "GPUs" and not doc["gpus_allocated"]:
            lines.append(f"  {row.resource:<7} none asked")
            continue
        painted = bar(fraction, style if judged else Style(False, style.fill))
        lines.append(f"  {row.resource:<7} {painted} {row.efficiency:>14}")
        lines.append(f"  {'':<7} asked {row.allocated}; used {row.used}")
    nodes = document.get("per_node") or []
    if len(nodes) > 1:
        lines += ["", style.bold("  Per node")]
        lines += [f"    {_node_line(node)}" for node in nodes]
    for note in doc["notes"]:
        lines += ["", f"  Note: {_said(note)}"]
    if doc["warnings"]:
        lines += ["", style.bold("  Warnings")]
    for warning in doc["warnings"]:
        title = f"! {_said(warning_title(str(warning['code'])))}"
        said = _wrapped(f"{title}: {_said(warning['message'])}", "  ", "    ")
        lines.append(said.replace(title, style.red(title), 1))
        lines.append(_wrapped(f"What to change: {_said(warning['advice'])}", "    ", "      "))
        lines += [f"        {_said(label)}: {_said(value)}"
                  for label, value in figure_lines(warning["figures"])]
    ranks = document.get("peer_ranks")
    if isinstance(ranks, Mapping):
        lines += ["", *rank_lines(ranks)]
    if report_url:
        lines += ["", f"  Report with plots: {report_url}"]
    return lines


def bar(fraction: Optional[float], style: Style, width: int = BAR_WIDTH) -> str:
    """`[#####     ]`, filled by `fraction` (0-1, capped: memory can exceed its request)."""
    if fraction is None or not math.isfinite(fraction):
        return "[" + " " * width + "]"
    filled = round(min(max(fraction, 0.0), 1.0) * width)
    inside = style.fill * filled + " " * (width - filled)
    return "[" + style.by_efficiency(inside, fraction) + "]"


def rank_lines(ranks: Mapping[str, Any]) -> list[str]:
    """The peer ranks the monitor adds to a document it serves (`peer_ranks`), in its words."""
    found = []
    for key, label in (("cpu_efficiency", "CPU efficiency"),
                       ("memory_efficiency", "Memory efficiency")):
        rank = ranks.get(key)
        if isinstance(rank, Mapping) and isinstance(rank.get("text"), str):
            window = _said(ranks.get("window_days", 30))
            found.append(f"  {label} among the last {window} days' "
                         f"jobs: {shown(rank['text'])}")
    return found


def _said(text: object) -> str:
    """Any text of the document on one line, without control or format characters."""
    return one_line(str(text), SAID_LIMIT)


def _wrapped(text: str, first: str, rest: str) -> str:
    return textwrap.fill(text, WIDTH, initial_indent=first, subsequent_indent=rest,
                         break_on_hyphens=False)


def _fractions(doc: UsageDocument) -> Sequence[Optional[float]]:
    gpus = doc["gpus"]
    gpu = (sum(float(g["mean_utilization"]) for g in gpus) / len(gpus)) if gpus else None
    limit = doc["time_limit_s"]
    return (doc["cpu_efficiency"], doc["memory_efficiency"], gpu,
            doc["elapsed_s"] / limit if limit else None)


def _state(doc: UsageDocument, style: Style) -> str:
    state = shown(doc["state"])
    return style.green(state) if state == "COMPLETED" else (
        style.yellow(state) if doc["running"] else style.red(state))


def _node_line(node: Mapping[str, Any]) -> str:
    cpu = node.get("cpu_used_s")
    cores = node.get("cores_used_mean")
    memory = node.get("memory_peak_bytes")
    gpus = node.get("gpus") or []
    parts = [f"{shown(str(node.get('node', '')))[:30]:<30}",
             "CPU not measured" if cpu is None else
             f"CPU {duration_text(cpu)} ({cores or 0:.2f} busy on average)",
             "memory not measured" if memory is None else f"memory peak {size_text(memory)}"]
    if gpus:
        parts.append("GPUs " + ", ".join(f"{100 * float(g['mean_utilization']):.0f} %"
                                         for g in gpus))
    return "  ".join(parts)
