"""`clusterwatch monitor usage_mail [--dry-run] [--once JOBID] [--limit N]`: the end-of-job
email poller.

Run by clusterwatch-usage-mail.timer. Each run queues the jobs that ended since the last run
(CLUSTERWATCH_EMAIL_JOBS: all, warnings, none), then tries every due email: those it just
queued, those MailProg queued, and failed sends whose retry time has come. `--dry-run`
prints each email that would go out (headers, text part, attachment name and size) and
changes nothing; `--once JOBID` queues and tries that one job, whatever the setting says;
`--limit N` lists at most N ended jobs per run (default mail_poll.LIMIT; the rest next run).

Progress on stderr, one line per email on stdout. Exit 0 ok, also when some sends failed and
will be retried; 1 when accounting could not list the ended jobs or --once's job is unknown;
2 a malformed --once job id; 78 configuration error.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django.utils import timezone

from clusterwatch.errors import ConfigError, RunError, UsageError
from clusterwatch.monitor.usage.accounting.interface import (
    AccountingConfigError,
    AccountingError,
    InvalidJobId,
    check_jobid,
)
from clusterwatch.monitor.usage.accounting_source import accounting
from clusterwatch.monitor.usage.mail import outbox as mail_outbox
from clusterwatch.monitor.usage.mail.delivery import (
    Delivery,
    MailOutcome,
    Sender,
    deliver,
    deliver_due,
    outcome_line,
    run_sender,
)
from clusterwatch.monitor.usage.mail.poll import LIMIT, poll
from clusterwatch.monitor.usage.mail.recipient import recipient_for
from clusterwatch.monitor.usage.models import UsageMail


class Command(BaseCommand):
    help = ("Queue the end-of-job usage emails of the jobs that ended since the last run and "
            "send every due one (retries included). Exit 0 ok (also when sends will be "
            "retried), 1 accounting failed, 2 bad --once job id, 78 configuration error.")
    # Django's system checks load every URL and view (matplotlib among them): seconds that
    # an operational command run by a timer or by slurmctld has no use for.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dry-run", action="store_true",
                            help="print each email that would be sent; send and change nothing")
        parser.add_argument("--once", metavar="JOBID",
                            help="queue and try this job's email only (whatever "
                                 "CLUSTERWATCH_EMAIL_JOBS says)")
        parser.add_argument("--limit", metavar="N", type=_positive, default=LIMIT,
                            help=f"list at most N ended jobs this run, the earliest ended "
                                 f"(default {LIMIT}); the rest are listed next run")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["once"] is not None:
            try:
                jobid = check_jobid(options["once"])
            except InvalidJobId as exc:
                raise UsageError(f"--once: {exc}") from None
        sender = run_sender(dry_run=options["dry_run"])
        now = timezone.now()
        if options["once"] is not None:
            self._show([self._once(jobid, sender, now)])
            return
        failure = None
        try:
            found = poll(accounting(sender.config), sender.mail, now, dry_run=sender.dry_run,
                         limit=options["limit"])
        except AccountingConfigError as exc:
            raise ConfigError(str(exc)) from None
        except AccountingError as exc:
            failure = exc
            self.stderr.write(f"usage_mail: accounting could not list the ended jobs: {exc}")
        else:
            for lost in found.unreadable:  # one line each, naming it, never its content
                which = f"job {lost.jobid}" if lost.jobid else "a line"
                self.stderr.write(f"usage_mail: skipped {which} accounting lists: "
                                  f"{lost.reason}")
            self.stderr.write(f"usage_mail: {found.ended} jobs ended since "
                              f"{found.since:%Y-%m-%d %H:%M:%S} UTC, {found.queued} queued"
                              + (f", {len(found.no_address)} without an email address"
                                 if found.no_address else "")
                              + (f", {len(found.unreadable)} unreadable in accounting "
                                 "(skipped)" if found.unreadable else "")
                              + (", more to list next run" if found.cut else ""))
        results = deliver_due(sender, now, progress=self.stderr.write)
        if failure is None and sender.dry_run:
            results += [deliver(row, sender, now) for row in found.unsaved]
        self._show(results)
        if failure is not None:
            raise RunError(f"accounting failed: {failure}")

    def _once(self, jobid: str, sender: Sender, now: datetime) -> Delivery:
        try:
            job = accounting(sender.config).job(jobid)
        except AccountingConfigError as exc:
            raise ConfigError(str(exc)) from None
        except AccountingError as exc:
            raise RunError(str(exc)) from None
        recipient = recipient_for(job.user, sender.mail)
        if recipient is None:
            raise RunError(f"no email address for user {job.user[:64]!r}: none in the "
                           "monitor's account and no CLUSTERWATCH_EMAIL_DOMAIN")
        row = UsageMail.objects.filter(jobid=job.jobid).first()
        if row is not None and row.state == UsageMail.SENT:
            return Delivery(job.jobid, MailOutcome.SENT,
                            f"already, at {row.sent_at:%Y-%m-%d %H:%M:%S}")
        if sender.dry_run:
            return deliver(row or UsageMail(jobid=job.jobid, user=job.user, recipient=recipient,
                                            trigger="command", created_at=now), sender, now)
        if row is None:
            row, _created = mail_outbox.enqueue(job.jobid, user=job.user, recipient=recipient,
                                                trigger="command", now=now)
        else:
            mail_outbox.take_over(row, now)
        claimed = mail_outbox.claim(row.id, now, whenever=True)
        if claimed is None:
            return Delivery(job.jobid, MailOutcome.BUSY, "another run has it, or it was just sent")
        return deliver(claimed, sender, now)

    def _show(self, results: list[Delivery]) -> None:
        for result in results:
            self.stdout.write(outcome_line(result))
        counts = Counter(result.outcome.value for result in results)
        if results:
            self.stderr.write("usage_mail: " + ", ".join(
                f"{count} {outcome}" for outcome, count in sorted(counts.items())))


def _positive(text: str) -> int:
    # A run must list at least one job, or the poller would never move on.
    if not text.isdigit() or int(text) < 1:
        raise ValueError(text)
    return int(text)
