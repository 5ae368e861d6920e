"""The kept summaries as the account reports and peer ranks read them: one query each, only
the fields they use (the document's partition, elapsed time and allocations are read by the
database's JSON operators, not by loading whole documents)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Optional

from django.db.models import Q

from clusterwatch.monitor.usage.analysis.accounts import (
    EARLIER_MONTHS,
    AccountReport,
    JobUsage,
    Month,
    monthly_reports,
)
from clusterwatch.monitor.usage.analysis.peer_rank import PeerJob, peer_window
from clusterwatch.monitor.usage.models import KeptSummary


def month_reports(month: Month, account: Optional[str] = None) -> list[AccountReport]:
    """The month's account reports with the months before, as `usage_monthly`, the account
    pages and the monthly email all show them: one query, one computation."""
    first = month
    for _ in range(EARLIER_MONTHS):
        first = first.previous()
    return monthly_reports(month_jobs(first, month, account), month, account=account)


def month_jobs(first: Month, last: Month, account: Optional[str] = None) -> list[JobUsage]:
    """The kept jobs that may have run in a month from `first` to `last`: ended on or after
    `first` began, started before `last` ended (or never started, and ended before then)."""
    rows = KeptSummary.objects.filter(end__gte=first.start).filter(
        Q(start__lt=last.end) | Q(start__isnull=True, end__lt=last.end))
    if account is not None:
        rows = rows.filter(account=account)
    values = rows.values("jobid", "user", "account", "end", "cpu_efficiency",
                         "memory_efficiency", "document__elapsed_s",
                         "document__cpus_allocated", "document__gpus_allocated")
    return [JobUsage(row["jobid"], row["user"], row["account"], row["end"],
                     _count(row["document__elapsed_s"]),
                     _count(row["document__cpus_allocated"]),
                     _count(row["document__gpus_allocated"]),
                     row["cpu_efficiency"], row["memory_efficiency"])
            for row in values]


def peer_jobs(job: PeerJob) -> list[PeerJob]:
    """The kept jobs of the job's partition that ended in its peer window."""
    begin, end = peer_window(job)
    rows = KeptSummary.objects.filter(end__gte=begin, end__lt=end,
                                      document__partition=job.partition).exclude(
        jobid=job.jobid).values("jobid", "end", "cpu_efficiency", "memory_efficiency")
    return [PeerJob(row["jobid"], job.partition, row["end"], row["cpu_efficiency"],
                    row["memory_efficiency"]) for row in rows]


def kept_peer_job(jobid: str) -> Optional[PeerJob]:
    row = KeptSummary.objects.filter(jobid=jobid, end__isnull=False).values(
        "jobid", "end", "cpu_efficiency", "memory_efficiency", "document__partition").first()
    if row is None or not isinstance(row["document__partition"], str):
        return None
    end: datetime = row["end"]
    return PeerJob(row["jobid"], row["document__partition"], end, row["cpu_efficiency"],
                   row["memory_efficiency"])


def _count(value: Any) -> int:
    """A document's count or seconds; 0 for one missing or damaged (not a number)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    return max(int(value), 0)
