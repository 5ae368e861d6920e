"""`clusterwatch monitor usage_watch [--dry-run]`: the alerts while a job runs.

Run by clusterwatch-usage-watch.timer (every 10 minutes). Reads the running jobs from
accounting and their figures from Prometheus (one query per rule, over every job at once),
and emails each job's owner once per (job, rule) it breaks (mail/watch_run.py): GPUs idle,
CPUs idle, memory near its limit, with the thresholds of the `[running]` table of
CLUSTERWATCH_USAGE_THRESHOLDS. The site hook (CLUSTERWATCH_USAGE_WATCH_HOOK) runs once for
each (job, rule) first found. `--dry-run` prints what it finds and writes or sends nothing.

One line per job flagged on stdout, then a summary; a failure is one line on stderr. Exit 0
ok (also when it alerted); 1 accounting or Prometheus did not answer, or an email or the hook
failed (emails are retried by later runs); 2 usage error; 78 configuration error.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django.utils import timezone

from clusterwatch.errors import ConfigError, RunError
from clusterwatch.monitor.usage.accounting.interface import AccountingConfigError
from clusterwatch.monitor.usage.accounting_source import accounting
from clusterwatch.monitor.usage.analysis.thresholds import load_running_thresholds
from clusterwatch.monitor.usage.mail.delivery import run_sender
from clusterwatch.monitor.usage.mail.watch_hook import hook_from
from clusterwatch.monitor.usage.mail.watch_run import Flagged, WatchResult, watch


class Command(BaseCommand):
    help = ("Look at the running jobs (idle GPUs, idle CPUs, memory near its limit) and email "
            "each job's owner once per rule broken. Exit 0 ok (also when it alerted), 1 a "
            "source or a send failed, 2 usage error, 78 configuration error.")
    requires_system_checks: list[str] = []  # as usage_mail: a timer's command

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dry-run", action="store_true",
                            help="print the jobs that break a rule; write and send nothing")

    def handle(self, *args: Any, **options: Any) -> None:
        sender = run_sender(dry_run=options["dry_run"])
        thresholds_file = os.environ.get("CLUSTERWATCH_USAGE_THRESHOLDS", "").strip()
        thresholds = load_running_thresholds(Path(thresholds_file) if thresholds_file
                                             else None)
        hook = hook_from(os.environ)
        try:
            result = watch(accounting(sender.config), sender, thresholds, timezone.now(),
                           hook=None if sender.dry_run else hook)
        except AccountingConfigError as exc:
            raise ConfigError(str(exc)) from None
        for flagged in result.flagged:
            self.stdout.write(flagged_line(flagged))
        for line in (*result.retry, *result.failed, *result.hook_failures):
            self.stderr.write(f"usage_watch: {line}")
        self.stdout.write(summary(result, dry_run=sender.dry_run))
        if result.failure is not None:
            raise RunError(result.failure)
        if result.retry or result.failed or result.hook_failures:
            raise RunError(f"{len(result.retry) + len(result.failed)} email(s) and "
                           f"{len(result.hook_failures)} hook run(s) failed "
                           "(emails are tried again by the next runs)")


def flagged_line(flagged: Flagged) -> str:
    job = flagged.job
    rules = ", ".join(alert.code + (" (new)" if alert.code in flagged.new else "")
                      for alert in flagged.alerts)
    holds = f"{job.cpus_allocated} CPUs" + (f", {job.gpus} GPUs" if job.gpus else "")
    return f"job {job.jobid} ({job.user[:64]}, {holds}): {rules}: {flagged.alerts[0].message}"


def summary(result: WatchResult, *, dry_run: bool) -> str:
    if result.failure is not None:
        return (f"usage_watch: no jobs judged (a source did not answer); {result.sent} "
                "emails sent")
    text = (f"usage_watch: {result.running} running jobs, {result.measured} with figures, "
            f"{len(result.flagged)} breaking a rule ({result.findings} findings")
    if dry_run:
        return text + "); dry run: nothing written or sent"
    text += (f", {result.new} new); {result.sent} emails sent"
             + (f", {len(result.retry)} to retry" if result.retry else "")
             + (f", {len(result.failed)} failed" if result.failed else "")
             + (f", {result.untried} left to the next run (the SMTP server did not answer)"
                if result.untried else ""))
    if result.no_address:
        text += f"; {len(result.no_address)} owners without an email address"
    return text
