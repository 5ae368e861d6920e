"""Monthly account reports: per Slurm account, what its jobs allocated in a calendar month
(UTC) and how much of it they used, with the most wasteful jobs and users and the same figures
for the months before.

Pure: plain records in, plain figures out; the reader of the kept summaries is
`usage.accounts_source`.

The month rule: a job's hours count in a month for the part of its run inside it. The run is
taken as the `elapsed_s` seconds that ended at its end (`[end - elapsed, end)`), so a job that
ran from 30 March 22:00 to 1 April 02:00 gives two hours to March and two to April, and counts
as a job in both. A job that ran no time (cancelled before it started) counts in the month
its end falls in, with no hours.

CPU and memory efficiency are means weighted by the job's CPU-hours in the month, over the
jobs that have the figure; a job without it counts in jobs and hours, never in efficiency or
waste. Wasted CPU-hours = CPU-hours x (1 - CPU efficiency), never below 0 (an efficiency
above 1, hyperthreads counted as CPUs, wastes nothing).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Optional

EARLIER_MONTHS = 3
TOP = 5


@dataclass(frozen=True, order=True)
class Month:
    year: int
    month: int

    @classmethod
    def parse(cls, text: str) -> Month:
        """`YYYY-MM`; ValueError (one line) for anything else."""
        parts = text.split("-")
        if (len(parts) != 2 or len(parts[0]) != 4 or len(parts[1]) != 2
                or not all(part.isascii() and part.isdigit() for part in parts)):
            raise ValueError(f"--month must be YYYY-MM, not {text[:40]!r}")
        year, month = int(parts[0]), int(parts[1])
        # December 9999 ends in year 10000, which no datetime holds.
        if not 1 <= month <= 12 or year < 1970 or (year, month) >= (9999, 12):
            raise ValueError(f"--month must be YYYY-MM, not {text[:40]!r}")
        return cls(year, month)

    @classmethod
    def last_complete(cls, now: datetime) -> Month:
        """The month before the one `now` (UTC) falls in."""
        now = now.astimezone(timezone.utc)
        return cls(now.year, now.month).previous()

    def previous(self) -> Month:
        return Month(self.year - 1, 12) if self.month == 1 else Month(self.year, self.month - 1)

    def following(self) -> Month:
        return Month(self.year + 1, 1) if self.month == 12 else Month(self.year, self.month + 1)

    @property
    def start(self) -> datetime:
        return datetime(self.year, self.month, 1, tzinfo=timezone.utc)

    @property
    def end(self) -> datetime:
        return self.following().start

    def __str__(self) -> str:
        return f"{self.year:04d}-{self.month:02d}"


@dataclass(frozen=True)
class JobUsage:
    jobid: str
    user: str
    account: str
    end: datetime
    elapsed_s: int
    cpus: int
    gpus: int
    cpu_efficiency: Optional[float]
    memory_efficiency: Optional[float]


@dataclass(frozen=True)
class AccountFigures:
    month: str
    jobs: int
    cpu_hours: float
    gpu_hours: float
    cpu_efficiency: Optional[float]
    memory_efficiency: Optional[float]
    wasted_cpu_hours: float


@dataclass(frozen=True)
class Wasted:
    name: str  # a job id or a user
    wasted_cpu_hours: float
    cpu_hours: float


@dataclass(frozen=True)
class AccountReport:
    account: str
    figures: AccountFigures
    wasteful_jobs: list[Wasted] = field(default_factory=list)
    wasteful_users: list[Wasted] = field(default_factory=list)
    earlier: list[AccountFigures] = field(default_factory=list)  # the month before first


def hours_in(job: JobUsage, month: Month) -> Optional[float]:
    """The job's hours of run inside `month`; None when it has no part in it."""
    elapsed = max(job.elapsed_s, 0)
    end = job.end.astimezone(timezone.utc)
    if elapsed == 0:
        return 0.0 if month.start <= end < month.end else None
    # A run longer than the time since the month began starts before it: so taken, an
    # elapsed time beyond any datetime (a damaged document) is no OverflowError.
    since_start = (end - month.start).total_seconds()
    begin = month.start if elapsed >= since_start else end - timedelta(seconds=elapsed)
    overlap = (min(end, month.end) - max(begin, month.start)).total_seconds()
    return overlap / 3600 if overlap > 0 else None


def wasted(cpu_hours: float, efficiency: Optional[float]) -> float:
    return 0.0 if efficiency is None else cpu_hours * max(0.0, 1.0 - efficiency)


def monthly_reports(jobs: Iterable[JobUsage], month: Month, *, account: Optional[str] = None,
                    earlier_months: int = EARLIER_MONTHS, top: int = TOP
                    ) -> list[AccountReport]:
    """One report per account with a job in `month` (or `account` alone), by account name."""
    chosen = [job for job in jobs if account is None or job.account == account]
    months = [month]
    for _ in range(earlier_months):
        months.append(months[-1].previous())
    names = sorted({job.account for job in chosen if hours_in(job, month) is not None})
    reports = []
    for name in names:
        own = [job for job in chosen if job.account == name]
        reports.append(AccountReport(
            name, _figures(own, month), *_most_wasteful(own, month, top),
            earlier=[_figures(own, earlier) for earlier in months[1:]]))
    return reports


def _figures(jobs: Sequence[JobUsage], month: Month) -> AccountFigures:
    count, cpu_hours, gpu_hours, waste = 0, 0.0, 0.0, 0.0
    cpu_weighted, cpu_weight, memory_weighted, memory_weight = 0.0, 0.0, 0.0, 0.0
    for job in jobs:
        hours = hours_in(job, month)
        if hours is None:
            continue
        count += 1
        job_cpu_hours = max(job.cpus, 0) * hours
        cpu_hours += job_cpu_hours
        gpu_hours += max(job.gpus, 0) * hours
        if job.cpu_efficiency is not None:
            cpu_weighted += job.cpu_efficiency * job_cpu_hours
            cpu_weight += job_cpu_hours
            waste += wasted(job_cpu_hours, job.cpu_efficiency)
        if job.memory_efficiency is not None:
            memory_weighted += job.memory_efficiency * job_cpu_hours
            memory_weight += job_cpu_hours
    return AccountFigures(str(month), count, cpu_hours, gpu_hours,
                          cpu_weighted / cpu_weight if cpu_weight > 0 else None,
                          memory_weighted / memory_weight if memory_weight > 0 else None,
                          waste)


def _most_wasteful(jobs: Sequence[JobUsage], month: Month, top: int
                   ) -> tuple[list[Wasted], list[Wasted]]:
    """The `top` jobs and users by wasted CPU-hours in the month (ties by name); those that
    wasted nothing are left out."""
    by_job: list[Wasted] = []
    by_user: dict[str, tuple[float, float]] = {}
    for job in jobs:
        hours = hours_in(job, month)
        if hours is None or job.cpu_efficiency is None:
            continue
        job_cpu_hours = max(job.cpus, 0) * hours
        waste = wasted(job_cpu_hours, job.cpu_efficiency)
        by_job.append(Wasted(job.jobid, waste, job_cpu_hours))
        user_waste, user_hours = by_user.get(job.user, (0.0, 0.0))
        by_user[job.user] = (user_waste + waste, user_hours + job_cpu_hours)
    users = [Wasted(user, waste, hours) for user, (waste, hours) in by_user.items()]

    def ranked(items: list[Wasted]) -> list[Wasted]:
        kept = [item for item in items if item.wasted_cpu_hours > 0]
        return sorted(kept, key=lambda item: (-item.wasted_cpu_hours, item.name))[:top]

    return ranked(by_job), ranked(users)
