"""The email of a rule a running job broke (usage_watch): plain text, the rule's message, what
to do now, the figures it compared, and the link to the job's report so far.

Its Message-ID is made of the job id, the rule and the row's creation time, so a copy sent
again after a crash between the SMTP answer and the row's update carries the same id (mail
systems that drop duplicates by Message-ID drop it), as the end-of-job email's does.
Everything the job's owner wrote (its name) is made one line (shown_text.one_line).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django.core.mail import EmailMessage

from clusterwatch.monitor.core.humanize import duration_text
from clusterwatch.monitor.usage.models import UsageAlert
from clusterwatch.monitor.usage.rendering.figures_text import figure_value
from clusterwatch.monitor.usage.rendering.shown_text import one_line
from clusterwatch.monitor.usage.rendering.summary_rows import percent

NAME_LIMIT = 60
TITLES = {
    "gpu_idle": "its GPUs are idle",
    "cpu_idle": "most of its CPUs are idle",
    "memory_near_limit": "it is close to its memory limit",
}
RULE_NAMES = {"gpu_idle": "Idle GPUs", "cpu_idle": "Idle CPUs",
              "memory_near_limit": "Memory near its limit"}
LABELS = {
    "gpus_allocated": "GPUs allocated",
    "gpus_idle": "GPUs idle",
    "gpus_measured": "GPUs measured",
    "highest_utilization": "highest utilisation of an idle GPU in the window",
    "cpu_efficiency": "CPU efficiency in the window (busy / allocated)",
    "cores_busy": "CPUs busy on average in the window",
    "cpus_allocated": "CPUs allocated",
    "memory_used_bytes": "memory held (RSS + shared memory)",
    "memory_limit_bytes": "memory limit",
    "ratio": "memory held / limit",
    "node": "node",
    "threshold": "threshold",
    "window_s": "window",
}
FRACTIONS = frozenset({"highest_utilization", "cpu_efficiency", "ratio", "threshold"})


def rule_name(code: str) -> str:
    return RULE_NAMES.get(code, code.replace("_", " ").capitalize())


def figure_rows(figures: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(label, value with its unit) of each figure the rule compared, in its order."""
    rows = []
    for key, value in figures.items():
        if key in FRACTIONS and isinstance(value, (int, float)):
            shown = percent(value)
        elif key == "cores_busy" and isinstance(value, (int, float)):
            shown = f"{value:.2f}"
        else:
            shown = figure_value(key, value)
        rows.append((LABELS.get(key, key.replace("_", " ")), one_line(shown, 80)))
    return rows


def subject(row: UsageAlert, name: str) -> str:
    return one_line(f"Job {row.jobid} ({name}) is still running: "
                    f"{TITLES.get(row.rule, rule_name(row.rule))}", 200)


def text(row: UsageAlert, *, name: str, greeting: str, base_url: str, now: datetime) -> str:
    running = duration_text((now - row.job_start).total_seconds()) \
        if row.job_start is not None and row.job_start <= now else ""
    lines = [
        f"Hello {greeting},",
        "",
        f"your job {row.jobid} (\"{name}\", account {one_line(row.account, 64)}, partition "
        f"{one_line(row.partition, 64)}) is still running"
        + (f" ({running} so far)" if running else "") + ".",
        "",
        row.message,
        "",
        "What to do now:",
        row.advice,
        "",
        "The figures:",
        *(f"  {label}: {value}" for label, value in figure_rows(_figures(row.figures))),
        "",
        f"The job's report so far: {base_url}/usage/jobs/{row.jobid}/",
        "",
        "You get this email once for this job and this finding; the end-of-job email still "
        "comes when the job ends.",
    ]
    return "\n".join(lines) + "\n"


def build(row: UsageAlert, *, greeting: str, base_url: str, sender: str,
          now: datetime) -> EmailMessage:
    name = one_line(row.name, NAME_LIMIT) or "no name"
    domain = sender.rpartition("@")[2] or "localhost"
    return EmailMessage(
        subject=subject(row, name),
        body=text(row, name=name, greeting=one_line(greeting, 60), base_url=base_url,
                  now=now),
        from_email=sender, to=[row.recipient],
        headers={
            "Message-ID": f"<usage-watch-{row.jobid}.{row.rule}."
                          f"{int(row.created_at.timestamp())}@{domain}>",
            "Auto-Submitted": "auto-generated",  # RFC 3834: no vacation replies
            "X-Clusterwatch-Job": row.jobid,
            "X-Clusterwatch-Rule": row.rule,
        })


def _figures(figures: Any) -> dict[str, Any]:
    return figures if isinstance(figures, dict) else {}  # a damaged row: none shown
