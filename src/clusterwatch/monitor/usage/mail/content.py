"""The end-of-job email's words: its subject and its text part from a job's usage document
(mail_html says the same in HTML; mail_message puts them together). Pure: no I/O.

A researcher reads it in a minute: what the job asked for and what it used (CPU, memory,
GPUs, time), each warning with what to change in the job script, the notes, and links to the
job's page and PDF. Everything the job's owner wrote (its name above all) is made one line,
so no name can add a header or a line that looks like ours.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional, cast

from clusterwatch.monitor.core.humanize import duration_text
from clusterwatch.monitor.usage.analysis.summary_json import UsageDocument
from clusterwatch.monitor.usage.peer_ranks import PeerRanksDocument, rank_lines
from clusterwatch.monitor.usage.rendering.figures_text import (
    figure_lines,
    moment_text,
    warning_title,
)
from clusterwatch.monitor.usage.rendering.shown_text import one_line
from clusterwatch.monitor.usage.rendering.summary_rows import SummaryRow, summary_rows

NAME_LIMIT = 60  # characters of a job name in the subject and the text
# one_line (shown_text) makes user-written text (a job name, a first name) safe for a header
# or a line of text; the pages and the PDF show names through the same function.


@dataclass(frozen=True)
class MailLinks:
    job_page: str
    pdf: str


@dataclass(frozen=True)
class MailContent:
    subject: str
    text: str  # the text/plain part
    html: str  # the text/html part, a whole document with inline CSS only
    html_body: str  # what its <body> holds: the /mail/<jobid> page shows it


def links(base_url: str, jobid: str) -> MailLinks:
    base = base_url.rstrip("/")
    return MailLinks(job_page=f"{base}/usage/jobs/{jobid}/", pdf=f"{base}/pdf/{jobid}")


def job_name(document: UsageDocument) -> str:
    """The job's name, one line; "" when the document has none (kept before names were)."""
    name = cast(Mapping[str, Any], document).get("name")
    return one_line(name, NAME_LIMIT) if isinstance(name, str) else ""


def subject_of(document: UsageDocument) -> str:
    """`Job 4242 (analysis) COMPLETED: used 48% of its CPUs, 3% of its memory (2 warnings)`."""
    name = job_name(document)
    head = f"Job {document['jobid']}" + (f" ({name})" if name else "")
    state = one_line(document["state"], 32) or "ENDED"
    if document["running"]:
        state = "still running"
    cpu, memory = _whole_percent(document["cpu_efficiency"]), _whole_percent(
        document["memory_efficiency"])
    if cpu is None and memory is None:
        used = "usage not measured"
    else:
        used = (f"used {cpu or 'an unmeasured share'} of its CPUs, "
                f"{memory or 'an unmeasured share'} of its memory")
    count = len(document["warnings"])
    tail = f" ({count} warning{'s' if count != 1 else ''})" if count else ""
    return f"{head} {state}: {used}{tail}"


def opening(document: UsageDocument) -> str:
    """The first sentence: which job, how it ended, how long it ran."""
    name = job_name(document)
    which = f"Your job {document['jobid']}" + (f" ({name})" if name else "")
    where = one_line(document["partition"], 40)
    on = f" in partition {where}" if where else ""
    if document["running"]:
        return (f"{which} is still running{on}: the figures below are what it has used so far, "
                f"after {duration_text(document['elapsed_s'])}.")
    return (f"{which} ended{on} at {moment_text(document['end'])} with state "
            f"{one_line(document['state'], 32)}, after {duration_text(document['elapsed_s'])}.")


def text_part(document: UsageDocument, *, greeting: str, base_url: str,
              ranks: Optional[PeerRanksDocument] = None) -> str:
    found = links(base_url, document["jobid"])
    lines = [f"Hello {one_line(greeting, 60)},", "", opening(document), "",
             "What it asked for and what it used", ""]
    lines += _table(summary_rows(document))
    if ranks is not None:
        lines += ["", peers_heading(ranks),
                  *(f"  {label}: {one_line(text, 200)}" for label, text in rank_lines(ranks))]
    lines += ["", *warnings_text(document)]
    notes = [one_line(note, 400) for note in document["notes"]]
    if notes:
        lines += ["", "Notes", *(f"  - {note}" for note in notes)]
    lines += ["", "The full report, with plots over the job's whole life:",
              f"  {found.job_page}",
              "The same report as a PDF (attached to this email too):",
              f"  {found.pdf}",
              "", "-- ", "clusterwatch usage reports: sent once, when the job ended."]
    return "\n".join(lines) + "\n"


def peers_heading(ranks: PeerRanksDocument) -> str:
    return (f"How it compares with the jobs of partition {one_line(ranks['partition'], 40)} "
            f"that ended in the {ranks['window_days']} days before it")


def warnings_text(document: UsageDocument) -> list[str]:
    found = document["warnings"]
    if not found:
        return ["Nothing to change: no warning about this job's use of what it asked for."]
    lines = [f"What to change next time ({len(found)} warning{'s' if len(found) != 1 else ''})"]
    for number, warning in enumerate(found, 1):
        lines += ["", f"{number}. {warning_title(warning['code'])}: "
                      f"{one_line(warning['message'], 400)}",
                  f"   What to change: {one_line(warning['advice'], 600)}"]
        figures = "; ".join(f"{label}: {value}" for label, value in
                            figure_lines(warning["figures"]))
        if figures:
            lines.append(f"   Figures: {one_line(figures, 600)}")
    return lines


def _table(rows: tuple[SummaryRow, ...]) -> list[str]:
    table = [("", "Asked for", "Used", "Efficiency"),
             *((row.resource, row.allocated, row.used, row.efficiency) for row in rows)]
    widths = [max(len(line[column]) for line in table) for column in range(3)]
    return [("  " + "  ".join(cell.ljust(width) for cell, width in zip(line[:3], widths))
             + "  " + line[3]).rstrip() for line in table]


def _whole_percent(fraction: Optional[float]) -> Optional[str]:
    if fraction is None or not math.isfinite(fraction):
        return None
    if 0 < fraction < 0.005:
        return "<1%"
    return f"{round(100 * fraction)}%"
