"""The staff's page of running jobs that break a rule now: the rows the latest usage_watch run
found broken (UsageAlert, last seen at the run's time), with since when, the rule and its
figures, and what each job holds of the cluster. One query for the run's time, one for the
rows: no accounting or Prometheus call, so the page answers when those are down.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Optional

from clusterwatch.monitor.core.humanize import age_text, duration_text, size_text
from clusterwatch.monitor.usage.mail.alert_message import figure_rows, rule_name
from clusterwatch.monitor.usage.mail.watch_run import CURSOR
from clusterwatch.monitor.usage.models import UsageAlert, UsageMailCursor
from clusterwatch.monitor.usage.rendering.shown_text import shown

RUNNING_ROWS = 500


@dataclass(frozen=True)
class RunningRow:
    jobid: str
    user: str
    account: str
    partition: str
    rule: str
    rule_title: str
    since: str  # when a run first found it broken
    broken_for: str
    running_for: str
    cpus: int
    gpus: int
    memory: str
    figures: tuple[tuple[str, str], ...]
    message: str
    email: str  # the outbox row's state, in words


@dataclass(frozen=True)
class RunningList:
    rows: tuple[RunningRow, ...]
    matching: int  # findings of the latest run (the rows are the first RUNNING_ROWS)
    jobs: int  # distinct jobs among them
    cpus: int  # what those jobs hold, each job counted once
    gpus: int
    memory: str
    last_run: Optional[str]  # the latest complete run's time, None before the first


def breaking_now(now: datetime, limit: int = RUNNING_ROWS) -> RunningList:
    cursor = UsageMailCursor.objects.filter(name=CURSOR).first()
    if cursor is None:
        return RunningList((), 0, 0, 0, 0, size_text(0), None)
    found = UsageAlert.objects.filter(last_seen_at=cursor.last_run)
    ordered = list(found.order_by("created_at", "jobid", "rule"))
    held: dict[str, tuple[int, int, int]] = {}
    for row in ordered:
        held[row.jobid] = (row.cpus, row.gpus, row.memory_bytes or 0)
    return RunningList(
        rows=tuple(_row(row, now) for row in ordered[:limit]), matching=len(ordered),
        jobs=len(held), cpus=sum(h[0] for h in held.values()),
        gpus=sum(h[1] for h in held.values()),
        memory=size_text(sum(h[2] for h in held.values())),
        last_run=f"{cursor.last_run:%Y-%m-%d %H:%M} UTC "
                 f"({age_text((now - cursor.last_run).total_seconds())})")


def _row(row: UsageAlert, now: datetime) -> RunningRow:
    figures = row.figures if isinstance(row.figures, dict) else {}
    return RunningRow(
        jobid=row.jobid, user=shown(row.user), account=shown(row.account),
        partition=shown(row.partition), rule=row.rule, rule_title=rule_name(row.rule),
        since=f"{row.created_at:%Y-%m-%d %H:%M} UTC",
        broken_for=duration_text((now - row.created_at).total_seconds()),
        running_for=(duration_text((now - row.job_start).total_seconds())
                     if row.job_start is not None else "—"),
        cpus=row.cpus, gpus=row.gpus,
        memory="—" if row.memory_bytes is None else size_text(row.memory_bytes),
        figures=tuple(figure_rows(figures)), message=shown(row.message),
        email={UsageAlert.SENT: "sent", UsageAlert.FAILED: "failed"}.get(row.state,
                                                                          "pending"))
