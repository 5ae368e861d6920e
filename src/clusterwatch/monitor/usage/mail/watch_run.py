"""One run of usage_watch: the running jobs, their figures, the rules they break, each new
(job, rule) written to the outbox and then emailed to the job's owner.

The order keeps every promise of the outbox (mail/alert_outbox.py): rows are written before
any send, so a run that dies after writing loses nothing (the next run sends them); each
row is claimed before it is sent, so two runs never send one twice; a send that fails is
retried by later runs. The run's time is kept (UsageMailCursor `usage_watch`) only when both
sources answered: the staff page then lists the rows that run found broken. Accounting or
Prometheus failing is one line and exit 1, after the emails already due are tried.
"""

from __future__ import annotations

import smtplib
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Optional

from django.db import transaction

from clusterwatch.http_client import request
from clusterwatch.monitor.usage.accounting.interface import (
    Accounting,
    AccountingConfigError,
    AccountingError,
    JobRecord,
)
from clusterwatch.monitor.usage.analysis.running_rules import RunningAlert, breaking
from clusterwatch.monitor.usage.analysis.thresholds import RunningThresholds
from clusterwatch.monitor.usage.mail import alert_message, alert_outbox
from clusterwatch.monitor.usage.mail.connection import SmtpLink
from clusterwatch.monitor.usage.mail.delivery import Sender
from clusterwatch.monitor.usage.mail.recipient import greeting_name, recipient_for
from clusterwatch.monitor.usage.mail.watch_hook import Hook, run_hook
from clusterwatch.monitor.usage.metrics.prometheus_api import HttpRequest, PrometheusError
from clusterwatch.monitor.usage.metrics.running_figures import read_running_figures
from clusterwatch.monitor.usage.models import UsageAlert, UsageMailCursor

CURSOR = "usage_watch"
NO_ADDRESS = "no email address for the job's owner"
# A row no run has found broken for this long is deleted once sent or failed (a job still
# breaking its rule keeps its row, so its owner is never told twice).
RETAIN = timedelta(days=90)


@dataclass(frozen=True)
class Flagged:
    job: JobRecord
    alerts: tuple[RunningAlert, ...]
    new: tuple[str, ...] = ()  # the rules first found broken by this run


@dataclass
class WatchResult:
    running: int = 0
    measured: int = 0  # running jobs Prometheus has figures of
    flagged: list[Flagged] = field(default_factory=list)
    sent: int = 0
    retry: list[str] = field(default_factory=list)  # one line each
    failed: list[str] = field(default_factory=list)  # given up, one line each
    failure: Optional[str] = None  # a source that did not answer
    hook_failures: list[str] = field(default_factory=list)
    no_address: set[str] = field(default_factory=set)  # owners without an address
    untried: int = 0  # due emails left to the next run: the SMTP server did not answer

    @property
    def new(self) -> int:
        return sum(len(f.new) for f in self.flagged)

    @property
    def findings(self) -> int:
        return sum(len(f.alerts) for f in self.flagged)


def watch(source: Accounting, sender: Sender, thresholds: RunningThresholds, now: datetime,
          *, hook: Optional[Hook] = None, http: HttpRequest = request) -> WatchResult:
    """The run; AccountingConfigError (exit 78) propagates, before anything is written."""
    result = WatchResult()
    try:
        jobs = source.running_jobs()
        figures = read_running_figures(sender.config.prometheus_url, thresholds.idle_for_s,
                                       now.timestamp(), sender.config.prometheus_timeout_s,
                                       http)
    except AccountingConfigError:
        raise
    except AccountingError as exc:
        result.failure = f"accounting could not list the running jobs: {exc}"
    except PrometheusError as exc:
        result.failure = f"{exc.headline}: {exc}"
    else:
        result.running = len(jobs)
        result.measured = sum(1 for job in jobs if (job.jobid_raw or job.jobid) in figures)
        found = breaking(jobs, figures, thresholds)
        if sender.dry_run:
            result.flagged = [Flagged(job, alerts) for job, alerts in found]
            return result
        result.flagged = [_record(job, alerts, sender, now, hook, result)
                          for job, alerts in found]
        _move_cursor(now)
        UsageAlert.objects.filter(last_seen_at__lt=now - RETAIN).exclude(
            state=UsageAlert.PENDING).delete()
    if not sender.dry_run:
        _deliver_due(sender, now, result)
    return result


def _record(job: JobRecord, alerts: tuple[RunningAlert, ...], sender: Sender, now: datetime,
            hook: Optional[Hook], result: WatchResult) -> Flagged:
    recipient = recipient_for(job.user, sender.mail)
    if recipient is None:
        result.no_address.add(job.user)
    new, again = [], []
    for alert in alerts:
        row, created = alert_outbox.enqueue(
            job.jobid, alert.code, now=now, user=job.user[:64], account=job.account[:64],
            partition=job.partition[:64], name=job.name[:200], recipient=recipient or "",
            cpus=job.cpus_allocated, gpus=job.gpus, memory_bytes=job.memory_requested_bytes,
            job_start=job.start, message=alert.message[:500], advice=alert.advice[:500],
            figures=dict(alert.figures),
            **({} if recipient else {"state": UsageAlert.FAILED, "last_error": NO_ADDRESS}))
        if created:
            new.append(alert.code)
            if hook is not None:
                why = run_hook(hook, job.jobid, alert.code)
                if why is not None:
                    result.hook_failures.append(f"job {job.jobid} {alert.code}: {why}")
        else:
            again.append((row.id, alert))
    with transaction.atomic():  # writes only: no read-then-write on SQLite (outbox.enqueue)
        for row_id, alert in again:  # the staff page shows the latest figures
            UsageAlert.objects.filter(id=row_id).update(
                last_seen_at=now, message=alert.message[:500], figures=dict(alert.figures))
    return Flagged(job, alerts, tuple(new))


def _deliver_due(sender: Sender, now: datetime, result: WatchResult) -> None:
    ids = alert_outbox.due(now)
    if not ids:
        return
    with SmtpLink(sender.password) as link:
        for row_id in ids:
            row = alert_outbox.claim(row_id, now)
            if row is None:
                continue  # another run has it
            try:
                answered = _send(row, sender, now, link, result)
            except BaseException:
                alert_outbox.release(row)  # an interrupt: the row as it was, for a later run
                raise
            if not answered:  # each email would wait out the timeout again: a run of 800
                result.untried = len(ids) - ids.index(row_id) - 1  # outlasts its unit
                return


def _send(row: UsageAlert, sender: Sender, now: datetime, link: SmtpLink,
          result: WatchResult) -> bool:
    """Send the row's email; False when the SMTP server could not be reached or stopped
    answering (a network error or a timeout), True otherwise."""
    what = f"job {row.jobid} {row.rule}"
    if not row.recipient:  # written failed, so never due: a row damaged by hand
        alert_outbox.give_up(row, NO_ADDRESS)
        result.failed.append(f"{what}: {NO_ADDRESS}")
        return True
    message = alert_message.build(row, greeting=greeting_name(row.user),
                                  base_url=sender.mail.base_url, sender=sender.mail.sender,
                                  now=now)
    try:
        link.send(message)
    except ValueError as exc:
        # The row makes no email (an address Django cannot parse, a header it refuses: a
        # row damaged by hand); raised, it would stop this run and every later one at it.
        why = alert_outbox.one_line(f"the email cannot be made: {exc}")
        alert_outbox.give_up(row, why)
        result.failed.append(f"{what}: {why}")
        return True
    except (smtplib.SMTPException, OSError) as exc:
        error = _smtp_error(exc, sender.password)
        state = alert_outbox.failed_attempt(row, error, now)
        (result.failed if state == UsageAlert.FAILED else result.retry).append(
            f"{what} to {row.recipient}: {error}")
        # smtplib reports a server that never answers as a disconnection (its timeout
        # closes the socket); every other SMTPException (an OSError too) is an answer.
        return (isinstance(exc, smtplib.SMTPException)
                and not isinstance(exc, smtplib.SMTPServerDisconnected))
    alert_outbox.sent(row, now)
    result.sent += 1
    return True


def _move_cursor(now: datetime) -> None:
    # Single statements, as the poller's cursor (mail/poll.py says why).
    rows = UsageMailCursor.objects.filter(name=CURSOR)
    if rows.update(last_run=now):
        return
    _row, created = UsageMailCursor.objects.get_or_create(name=CURSOR,
                                                          defaults={"last_run": now})
    if not created:
        rows.update(last_run=now)


def _smtp_error(exc: BaseException, password: str) -> str:
    """One line of what the server or the network said; never the password."""
    if isinstance(exc, smtplib.SMTPResponseException):
        said = exc.smtp_error.decode("utf-8", "replace") if isinstance(
            exc.smtp_error, bytes) else str(exc.smtp_error)
        text = f"SMTP {exc.smtp_code}: {said}"
    elif isinstance(exc, smtplib.SMTPException):
        text = f"SMTP: {type(exc).__name__}: {exc}"
    else:
        why = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        text = f"SMTP server unreachable: {why}"
    return alert_outbox.one_line(text.replace(password, "***") if password else text)
