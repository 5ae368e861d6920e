"""The poller's half of the end-of-job email: queue the jobs that ended since its last run.

It asks accounting for the jobs that ended since the last complete run (kept in the
database, UsageMailCursor) less OVERLAP, because slurmdbd records a job's end a little after
it happened: a job that ended just before the last run but reached accounting after it is
still found. Jobs already queued (by MailProg or an earlier run) are not queued again. The
cursor moves only after a complete run, so a failed accounting query loses nothing.

A line accounting printed but nobody can read (a `Start` that is no time) is left out and
named in the result: the same bytes will not read better next run, so it holds back no one
else's email and not the cursor (once it is mended, `usage_mail --once JOBID` sends it).
A listing is bounded (LIMIT jobs, the earliest ended first): when it was cut, the cursor
moves only to the last listed job's end, so the next run goes on from there; a listing whose
jobs all ended in that one second is asked again with a larger limit, or every run would list
the same jobs (a cancelled array ends all its tasks at once) and the poller would stall.

A heterogeneous job is one job to its user and to MailProg (SLURM_JOB_ID is its first
component's id): its components (`87100+0`, `87100+1`) are queued once, as `87100`, and the
email reports them all.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from clusterwatch.monitor.usage.accounting.interface import (
    Accounting,
    JobRecord,
    Listing,
    Unreadable,
)
from clusterwatch.monitor.usage.mail import outbox as mail_outbox
from clusterwatch.monitor.usage.mail.recipient import recipient_for
from clusterwatch.monitor.usage.mail.settings import MailSettings
from clusterwatch.monitor.usage.models import UsageMail, UsageMailCursor

CURSOR = "poller"
OVERLAP = timedelta(minutes=10)
FIRST_LOOK_BACK = timedelta(hours=1)  # the first run ever: jobs of the last hour, not history
RETAIN = timedelta(days=90)  # sent, failed and skipped rows are deleted after this
TRIGGER = "poller"
LIMIT = 10_000  # jobs per listing: what a run holds in memory at most


@dataclass
class PollResult:
    since: datetime
    ended: int = 0
    queued: int = 0
    no_address: list[str] = field(default_factory=list)  # users without any address
    unreadable: list[Unreadable] = field(default_factory=list)  # lines left out, named
    cut: bool = False  # more jobs ended than LIMIT: the next run goes on
    unsaved: list[UsageMail] = field(default_factory=list)  # --dry-run: what would be queued


def poll(source: Accounting, mail: MailSettings, now: datetime, *,
         dry_run: bool = False, limit: int = LIMIT) -> PollResult:
    """Queue each job that ended since the last run (AccountingError propagates, and the
    cursor stays where it was)."""
    cursor = UsageMailCursor.objects.filter(name=CURSOR).first()
    since = cursor.last_run - OVERLAP if cursor is not None else now - FIRST_LOOK_BACK
    result = PollResult(since=since)
    listing = source.jobs_ended_since(since, limit=limit)
    while _one_second(listing):  # the next run would list these same jobs again: ask more
        limit *= 2
        listing = source.jobs_ended_since(since, limit=limit)
    result.unreadable, result.cut = listing.unreadable, listing.cut
    jobs = _mailed_jobs(listing) if mail.jobs != "none" else []  # "none": MailProg's only
    queued = set(UsageMail.objects.filter(jobid__in=[job.jobid for job in jobs])
                 .values_list("jobid", flat=True))
    for job in jobs:
        if job.running or job.jobid in queued:
            continue
        result.ended += 1
        recipient = recipient_for(job.user, mail)
        if recipient is None:
            result.no_address.append(job.user)
            continue
        if dry_run:
            result.unsaved.append(UsageMail(jobid=job.jobid, user=job.user, recipient=recipient,
                                            trigger=TRIGGER, created_at=now))
            continue
        _row, created = mail_outbox.enqueue(job.jobid, user=job.user, recipient=recipient,
                                            trigger=TRIGGER, now=now)
        result.queued += int(created)
    if not dry_run:
        _move_cursor(_cursor(listing, now))
        UsageMail.objects.filter(created_at__lt=now - RETAIN).exclude(
            state=UsageMail.PENDING).delete()
    return result


def _move_cursor(last_run: datetime) -> None:
    """Where the next run lists from, in single statements.

    Not update_or_create: it reads, then writes, in one transaction, and on SQLite (WAL)
    such a transaction fails at once with "database is locked" when another process
    committed in between (two pollers at once, or MailProg at a job's end), never waiting
    out the busy timeout. An UPDATE, else get_or_create's INSERT (its transaction writes
    first), else the UPDATE again when another run made the row meanwhile.
    """
    rows = UsageMailCursor.objects.filter(name=CURSOR)
    if rows.update(last_run=last_run):
        return
    _row, created = UsageMailCursor.objects.get_or_create(name=CURSOR,
                                                          defaults={"last_run": last_run})
    if not created:
        rows.update(last_run=last_run)


def _mailed_jobs(listing: list[JobRecord]) -> list[JobRecord]:
    """One job per email: a heterogeneous job's components as the job itself (its id with
    the offset dropped), the first component standing for it, as sacct -j 87100 answers."""
    seen: set[str] = set()
    jobs = []
    for job in listing:
        jobid = job.jobid.partition("+")[0]
        if jobid in seen:
            continue
        seen.add(jobid)
        jobs.append(job if jobid == job.jobid else replace(job, jobid=jobid))
    return jobs


def _one_second(listing: Listing) -> bool:
    """A cut listing whose jobs all ended in one second: the cursor cannot pass that second
    (some of its jobs were not listed), so every run would list the same jobs and never the
    rest (more jobs than the limit end at once when an array is cancelled). Asked again with a
    larger limit, a listing that reaches past the second holds all of its jobs."""
    ends = {job.end for job in listing if job.end is not None}
    return listing.cut and len(ends) <= 1


def _cursor(listing: Listing, now: datetime) -> datetime:
    """Where the next run starts (less OVERLAP): now, or after a cut, the last job listed,
    its end then re-listed (OVERLAP added back, so progress is sure past a busy ten minutes;
    the jobs of that very second come again and are found queued)."""
    if not listing.cut or not listing:
        return now
    last_end = max((job.end for job in listing if job.end is not None), default=now)
    return min(last_end + OVERLAP, now)
