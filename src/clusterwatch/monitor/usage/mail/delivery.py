"""Delivering one outbox row: wait until the job's figures are final, then build and send.

A row is delivered only once accounting has the job ended and its kept summary exists (its
end plus two scrape intervals: the exporter's last scrape has landed), so the email shows
final figures, the same ones the API and pages will show for good. Before that the row
waits; a send, accounting or Prometheus failure is an attempt, tried again later
(mail_outbox); a configuration error stops the run (exit 78) and leaves the row as it was.
"""

from __future__ import annotations

import enum
import logging
import smtplib
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Callable, Optional

from django.conf import settings

from clusterwatch.monitor.usage.accounting.interface import (
    AccountingConfigError,
    AccountingError,
    UnknownJob,
)
from clusterwatch.monitor.usage.accounting_source import accounting
from clusterwatch.monitor.usage.config import UsageConfig, get_config
from clusterwatch.monitor.usage.mail import outbox as mail_outbox
from clusterwatch.monitor.usage.mail.connection import SmtpLink
from clusterwatch.monitor.usage.mail.content import MailContent
from clusterwatch.monitor.usage.mail.message import build_message, compose, describe
from clusterwatch.monitor.usage.mail.pdfs import POOL_FROM, RunPdfs, Ticket, render_workers
from clusterwatch.monitor.usage.mail.recipient import greeting_name, recipient_for
from clusterwatch.monitor.usage.mail.settings import (
    MailSettings,
    require_sending,
    settings_of,
    smtp_password,
)
from clusterwatch.monitor.usage.models import KeptSummary, UsageMail
from clusterwatch.monitor.usage.peer_ranks import peer_ranks_of
from clusterwatch.monitor.usage.usage_report import (
    KEEP_AFTER_SCRAPES,
    MetricsUnavailable,
    load_report,
)

log = logging.getLogger("clusterwatch.monitor.usage.mail")

RUNNING_RECHECK = timedelta(minutes=5)
UNKNOWN_RECHECK = timedelta(minutes=2)  # slurmdbd may lag slurmctld by seconds to minutes
UNKNOWN_GIVE_UP = timedelta(days=2)


@dataclass(frozen=True)
class Sender:
    """What every delivery of one run shares."""

    mail: MailSettings
    config: UsageConfig
    # "" without an SMTP login; never logged, scrubbed from error text, left out of the repr
    password: str = field(repr=False)
    dry_run: bool = False


class MailOutcome(enum.Enum):
    """What one delivery did; the value is the word the commands print and count."""

    SENT = "sent"
    WAITING = "waiting"  # the figures are not final yet: looked at again later
    RETRY = "retry"  # an attempt failed: tried again later
    FAILED = "failed"  # given up
    SKIPPED = "skipped"  # no warning, and only jobs with warnings are mailed
    BUSY = "busy"  # another run holds the row
    DRY_RUN = "dry-run"  # built, not sent


@dataclass(frozen=True)
class Delivery:
    jobid: str
    outcome: MailOutcome
    detail: str


def run_sender(*, dry_run: bool) -> Sender:
    """The run's settings; ConfigError (exit 78) before any row is touched. A dry run reads
    no password: it never connects."""
    mail = settings_of(settings)
    require_sending(mail)
    config = get_config()
    return Sender(mail, config, "" if dry_run else smtp_password(mail), dry_run)


def outcome_line(delivery: Delivery) -> str:
    if delivery.outcome is MailOutcome.DRY_RUN:
        return f"=== job {delivery.jobid}: would send ===\n{delivery.detail}"
    return f"job {delivery.jobid}: {delivery.outcome.value}: {delivery.detail}"


def deliver_due(sender: Sender, now: datetime,
                progress: Callable[[str], None] = lambda _line: None) -> list[Delivery]:
    """Every due pending row, each claimed first (a row another run holds is `busy`), over
    one SMTP connection. The PDFs are drawn ahead of the sends, a few rows at a time (on
    several processes for a large run: mail_pdfs), so a row is claimed only just before its
    email is built; a row is marked sent right after the server's "250", as before."""
    ids = mail_outbox.due(now)
    if len(ids) > 1:
        progress(f"usage_mail: {len(ids)} emails due")
    results: list[Optional[Delivery]] = []
    building: deque[tuple[int, _Built]] = deque()  # in the order they were claimed
    with _Run(sender, expected=len(ids)) as run:
        try:
            for number, row_id in enumerate(ids, 1):
                outcome = _claimed(row_id, sender, now, run)
                results.append(outcome if isinstance(outcome, Delivery) else None)
                if isinstance(outcome, _Built):
                    building.append((len(results) - 1, outcome))
                while building and (len(building) > run.ahead
                                    or run.pdfs.ready(building[0][1].ticket)):
                    index, built = building.popleft()
                    results[index] = _send(built, sender, now, run)
                if number % 25 == 0:
                    progress(f"usage_mail: {number} of {len(ids)} emails tried")
            while building:
                index, built = building[0]
                results[index] = _send(built, sender, now, run)
                building.popleft()
        except BaseException:
            # A configuration error (exit 78) or an interrupt: rows not sent go back as they
            # were (the one being sent, if any, already has: _send).
            if not sender.dry_run:
                for _index, built in building:
                    mail_outbox.release(built.row)
            raise
        if run.pdfs.drawn + run.pdfs.cached:
            progress(run.summary())
    return [result for result in results if result is not None]


def deliver(row: UsageMail, sender: Sender, now: datetime) -> Delivery:
    """Deliver a claimed row (under dry-run: any row, nothing written or sent)."""
    with _Run(sender, expected=1) as run:
        try:
            outcome = _deliver(row, sender, now, run)
            return outcome if isinstance(outcome, Delivery) else _send(outcome, sender, now,
                                                                        run)
        except BaseException:
            # A configuration error (exit 78) or an interrupt: the row goes back as it was.
            if not sender.dry_run:
                mail_outbox.release(row)
            raise


class _Run:
    """What the deliveries of one run share: the SMTP connection and the PDFs."""

    def __init__(self, sender: Sender, expected: int) -> None:
        workers = render_workers() if expected >= POOL_FROM else 1
        self.pdfs = RunPdfs(sender.config.cache_dir, workers)
        self.ahead = 2 * workers  # PDFs ordered before the oldest is sent
        self.link = SmtpLink(sender.password)

    def summary(self) -> str:
        pdfs = self.pdfs
        return (f"usage_mail: {pdfs.drawn} PDFs drawn, {pdfs.cached} from the render cache, "
                f"over {self.link.opened} SMTP connection{'' if self.link.opened == 1 else 's'}")

    def __enter__(self) -> _Run:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.link.close()
        self.pdfs.close()


@dataclass
class _Built:
    """A row whose email is decided and whose PDF is ordered."""

    row: UsageMail
    content: MailContent
    ticket: Ticket


def _claimed(row_id: int, sender: Sender, now: datetime, run: _Run) -> Delivery | _Built:
    if sender.dry_run:
        row: Optional[UsageMail] = UsageMail.objects.get(id=row_id)
    else:
        row = mail_outbox.claim(row_id, now)
    if row is None:
        return Delivery(str(row_id), MailOutcome.BUSY, "another run has it")
    try:
        return _deliver(row, sender, now, run)
    except BaseException:
        if not sender.dry_run:
            mail_outbox.release(row)
        raise


def _deliver(row: UsageMail, sender: Sender, now: datetime, run: _Run) -> Delivery | _Built:
    try:
        waiting = _not_final(row, sender.config, now)
        if waiting is not None:
            return _wait(row, sender, waiting[0], waiting[1])
        report = load_report(row.jobid, config=sender.config, now=now)
    except AccountingConfigError:
        raise
    except UnknownJob:
        return _unknown(row, sender, now)
    except (AccountingError, MetricsUnavailable) as exc:
        return _failed(row, sender, str(exc), now)
    document = report.document
    if not KeptSummary.objects.filter(jobid=document["jobid"]).exists():
        return _wait(row, sender, now + timedelta(minutes=1), "the figures are being kept")
    not_owners = _to_owner(row, sender, str(document["user"]))
    if not_owners is not None:
        return not_owners
    if row.trigger == "poller" and sender.mail.jobs != "all" and not document["warnings"]:
        why = f"no warning (CLUSTERWATCH_EMAIL_JOBS={sender.mail.jobs})"
        if not sender.dry_run:
            mail_outbox.skipped(row, why)
        return Delivery(row.jobid, MailOutcome.SKIPPED, why)
    try:
        content = compose(document, greeting=greeting_name(document["user"]),
                          base_url=sender.mail.base_url, ranks=peer_ranks_of(document))
        ticket = run.pdfs.order(document, report.series, report.series_note)
    except Exception as exc:  # a job whose report cannot be drawn must not stop the others
        return _unbuilt(row, sender, exc, now)
    return _Built(row, content, ticket)


def _send(built: _Built, sender: Sender, now: datetime, run: _Run) -> Delivery:
    row = built.row
    try:
        try:
            pdf = run.pdfs.take(built.ticket)
            message = build_message(built.content, jobid=row.jobid, pdf=pdf,
                                    sender=sender.mail.sender, recipient=row.recipient,
                                    queued_at=row.created_at)
        except Exception as exc:
            return _unbuilt(row, sender, exc, now)
        if sender.dry_run:
            return Delivery(row.jobid, MailOutcome.DRY_RUN, describe(message))
        try:
            run.link.send(message)
        except (smtplib.SMTPException, OSError) as exc:
            return _failed(row, sender, _smtp_error(exc, sender.password), now)
        mail_outbox.sent(row, now)
        return Delivery(row.jobid, MailOutcome.SENT, f"to {row.recipient}")
    except BaseException:
        if not sender.dry_run:
            mail_outbox.release(row)
        raise


def _unbuilt(row: UsageMail, sender: Sender, exc: Exception, now: datetime) -> Delivery:
    log.error("end-of-job email of job %s: could not be built", row.jobid, exc_info=exc)
    return _failed(row, sender, f"the email could not be built: {type(exc).__name__}", now)


def _to_owner(row: UsageMail, sender: Sender, owner: str) -> Optional[Delivery]:
    """The report goes to the job's owner, as accounting names them for this job alone. A row
    queued under another user (a line written in a job's name and read in the poller's list
    of every user's jobs, for an id that job then got) is re-addressed to the owner, or
    given up when the owner has no address; None when the row may be sent."""
    if owner[:64] == row.user:
        return None
    recipient = recipient_for(owner, sender.mail)
    if recipient is None:
        why = f"job {row.jobid} is {owner[:64]!r}'s, who has no email address"
        if not sender.dry_run:
            mail_outbox.give_up(row, why)
        return Delivery(row.jobid, MailOutcome.FAILED, why)
    if not sender.dry_run:
        mail_outbox.readdress(row, owner, recipient)
    row.user, row.recipient = owner[:64], recipient
    return None


def _not_final(row: UsageMail, config: UsageConfig,
               now: datetime) -> Optional[tuple[datetime, str]]:
    """(when to look again, why) while the job's figures are not final; None once they are."""
    if KeptSummary.objects.filter(jobid=row.jobid).exists():
        return None
    job = accounting(config).job(row.jobid)
    if job.running or job.end is None:
        return now + RUNNING_RECHECK, f"job {row.jobid} has not ended in accounting yet"
    final = job.end + timedelta(seconds=KEEP_AFTER_SCRAPES * config.scrape_interval_s)
    if now < final:
        return final, f"job {row.jobid} ended; its figures are final at {final:%H:%M:%S}"
    return None


def _wait(row: UsageMail, sender: Sender, until: datetime, why: str) -> Delivery:
    if not sender.dry_run:
        mail_outbox.wait(row, until, why)
    return Delivery(row.jobid, MailOutcome.WAITING, why)


def _unknown(row: UsageMail, sender: Sender, now: datetime) -> Delivery:
    why = f"job {row.jobid} is unknown to accounting"
    if now - row.created_at >= UNKNOWN_GIVE_UP:
        if not sender.dry_run:
            mail_outbox.give_up(row, f"{why} {UNKNOWN_GIVE_UP.days} days after it was queued")
        return Delivery(row.jobid, MailOutcome.FAILED, why)
    return _wait(row, sender, now + UNKNOWN_RECHECK, why)


def _failed(row: UsageMail, sender: Sender, error: str, now: datetime) -> Delivery:
    if sender.dry_run:
        return Delivery(row.jobid, MailOutcome.RETRY, error)
    state = mail_outbox.failed_attempt(row, error, now)
    given_up = state == UsageMail.FAILED
    return Delivery(row.jobid, MailOutcome.FAILED if given_up else MailOutcome.RETRY, error)


def _smtp_error(exc: BaseException, password: str) -> str:
    """One line saying what the server or the network said; never the password."""
    if isinstance(exc, smtplib.SMTPRecipientsRefused):
        said = "; ".join(f"{code} {_text(answer)}" for code, answer in exc.recipients.values())
        text = f"SMTP refused the recipient: {said}"
    elif isinstance(exc, smtplib.SMTPResponseException):
        text = f"SMTP {exc.smtp_code}: {_text(exc.smtp_error)}"
    elif isinstance(exc, smtplib.SMTPException):
        text = f"SMTP: {type(exc).__name__}: {exc}"
    else:
        why = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        text = f"SMTP server unreachable: {why}"
    return text.replace(password, "***") if password else text


def _text(answer: object) -> str:
    if isinstance(answer, bytes):
        return answer.decode("utf-8", "replace")
    return str(answer)
