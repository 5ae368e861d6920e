"""`clusterwatch monitor usage_mailprog -s SUBJECT ADDRESS`: Slurm's MailProg.

slurmctld runs it (through deploy/slurm/clusterwatch-mailprog) for every mail a job asked
for, with the job in SLURM_* variables (usage/mail/slurm_mailprog.py). For the end of a job (Ended,
Failed, Reached time limit) it queues the job's usage email and tries it once; every other
mail is not ours (the wrapper hands it to the site's mail program). It never holds
slurmctld long: one accounting query, at most one SMTP exchange; the email of a job whose
figures are not final yet (its end plus two scrape intervals) stays queued for the poller
(`usage_mail`, on a timer), which also retries failed sends.

Exit 0 when the email is queued, whether or not this first try sent it, and for a mail
that is not ours; 1 when no job, user or address can be found; 78 configuration error.
"""

from __future__ import annotations

import os
from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django.utils import timezone

from clusterwatch.errors import RunError
from clusterwatch.monitor.usage.accounting.interface import InvalidJobId, check_jobid
from clusterwatch.monitor.usage.mail import outbox as mail_outbox
from clusterwatch.monitor.usage.mail.delivery import deliver, outcome_line, run_sender
from clusterwatch.monitor.usage.mail.recipient import recipient_for
from clusterwatch.monitor.usage.mail.slurm_mailprog import is_end_of_job, read_call

TRIGGER = "mailprog"


class Command(BaseCommand):
    help = ("Slurm's MailProg (slurm.conf MailProg=/usr/local/sbin/clusterwatch-mailprog): "
            "queue the end-of-job usage email of the job in SLURM_JOB_ID and try it once. "
            "Exit 0 queued (or not an end-of-job mail), 1 no job or address, 78 configuration "
            "error.")
    # Django's system checks load every URL and view (matplotlib among them): seconds that
    # an operational command run by a timer or by slurmctld has no use for.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("-s", dest="subject", default="", metavar="SUBJECT",
                            help="the subject slurmctld wrote")
        parser.add_argument("address", nargs="?", default="", metavar="ADDRESS",
                            help="the job's --mail-user (used when no other address is known)")

    def handle(self, *args: Any, **options: Any) -> None:
        call = read_call(options["subject"], options["address"], os.environ)
        if not is_end_of_job(call.mail_type):
            self.stderr.write(f"usage_mailprog: {call.mail_type or 'no mail type'!r} is not "
                              "the end of a job: nothing queued")
            return
        if call.array_summary:
            self.stderr.write("usage_mailprog: an array's summary mail: nothing queued (each "
                              "task is a job of its own; --mail-type=ARRAY_TASKS mails them)")
            return
        if not call.jobid or not call.user:
            raise RunError("SLURM_JOB_ID or SLURM_JOB_USER is not set: usage_mailprog is run "
                           "by slurmctld as its MailProg")
        try:
            jobid = check_jobid(call.jobid)
        except InvalidJobId as exc:
            raise RunError(str(exc)) from None
        sender = run_sender(dry_run=False)  # ConfigError: exit 78, nothing queued
        recipient = recipient_for(call.user, sender.mail, call.address)
        if recipient is None:
            raise RunError(f"no email address for user {call.user[:64]!r}: none in the "
                           "monitor's account, no CLUSTERWATCH_EMAIL_DOMAIN, and Slurm's "
                           f"mail user {call.address[:64]!r} is not an address")
        now = timezone.now()
        row, created = mail_outbox.enqueue(jobid, user=call.user, recipient=recipient,
                                           trigger=TRIGGER, now=now)
        if not created:
            mail_outbox.asked_by_owner(row)
        claimed = mail_outbox.claim(row.id, now)
        if claimed is None:
            self.stderr.write(f"usage_mailprog: job {jobid}: queued before; not tried now "
                              "(sent already, not due, or another run has it)")
            return
        self.stderr.write("usage_mailprog: " + outcome_line(deliver(claimed, sender, now)))
