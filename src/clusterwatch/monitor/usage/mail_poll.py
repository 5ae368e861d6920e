"""The poller's half of the end-of-job email: queue the jobs that ended since its last run.

It asks accounting for the jobs that ended since the last complete run (kept in the
database, UsageMailCursor) less OVERLAP, because slurmdbd records a job's end a little after
it happened: a job that ended just before the last run but reached accounting after it is
still found. Jobs already queued (by MailProg or an earlier run) are not queued again. The
cursor moves only after a complete run, so a failed accounting query loses nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from clusterwatch.monitor.usage import mail_outbox
from clusterwatch.monitor.usage.accounting import Accounting
from clusterwatch.monitor.usage.mail_recipient import recipient_for
from clusterwatch.monitor.usage.mail_settings import MailSettings
from clusterwatch.monitor.usage.models import UsageMail, UsageMailCursor

CURSOR = "poller"
OVERLAP = timedelta(minutes=10)
FIRST_LOOK_BACK = timedelta(hours=1)  # the first run ever: jobs of the last hour, not history
RETAIN = timedelta(days=90)  # sent, failed and skipped rows are deleted after this
TRIGGER = "poller"


@dataclass
class PollResult:
    since: datetime
    ended: int = 0
    queued: int = 0
    no_address: list[str] = field(default_factory=list)  # users without any address
    unsaved: list[UsageMail] = field(default_factory=list)  # --dry-run: what would be queued


def poll(source: Accounting, mail: MailSettings, now: datetime, *,
         dry_run: bool = False) -> PollResult:
    """Queue each job that ended since the last run (AccountingError propagates, and the
    cursor stays where it was)."""
    cursor = UsageMailCursor.objects.filter(name=CURSOR).first()
    since = cursor.last_run - OVERLAP if cursor is not None else now - FIRST_LOOK_BACK
    result = PollResult(since=since)
    jobs = source.jobs_ended_since(since)
    if mail.jobs == "none":  # only what MailProg queues is sent
        jobs = []
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
        UsageMailCursor.objects.update_or_create(name=CURSOR, defaults={"last_run": now})
        UsageMail.objects.filter(created_at__lt=now - RETAIN).exclude(
            state=UsageMail.PENDING).delete()
    return result
