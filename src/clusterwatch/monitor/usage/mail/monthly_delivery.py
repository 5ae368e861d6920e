"""Sending the monthly account emails (`usage_monthly --mail`): queue one outbox row per
coordinator of each account that ran jobs in the month, then send every due row of the
month, each claimed first, over one SMTP connection (mail/connection.py).

The report is the month's, read when the row is sent (accounts_source.month_reports, once
per run): the figures the account page shows. The addresses are the end-of-job email's
(mail/recipient.py); a coordinator without one is told, not queued.
"""

from __future__ import annotations

import enum
import smtplib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Optional

from clusterwatch.monitor.usage.analysis.accounts import AccountReport
from clusterwatch.monitor.usage.coordinators import Coordinators
from clusterwatch.monitor.usage.mail import monthly_outbox
from clusterwatch.monitor.usage.mail.connection import SmtpLink

# The end-of-job email's reading of an SMTP failure: one line, the password never in it.
from clusterwatch.monitor.usage.mail.delivery import _smtp_error as smtp_error
from clusterwatch.monitor.usage.mail.monthly_message import build_message, compose
from clusterwatch.monitor.usage.mail.recipient import greeting_name, recipient_for
from clusterwatch.monitor.usage.mail.settings import MailSettings
from clusterwatch.monitor.usage.models import MonthlyMail


class Outcome(enum.Enum):
    SENT = "sent"
    RETRY = "retry"  # the send failed: tried again by a later run
    FAILED = "failed"  # given up
    BUSY = "busy"  # another run holds the row
    NO_ADDRESS = "no address"  # a coordinator the monitor knows no address of

    @property
    def failure(self) -> bool:
        return self in (Outcome.RETRY, Outcome.FAILED, Outcome.NO_ADDRESS)


@dataclass(frozen=True)
class MonthlyDelivery:
    account: str
    user: str
    outcome: Outcome
    detail: str

    def line(self, month: str) -> str:
        return (f"account {self.account} {month} to {self.user}: {self.outcome.value}: "
                f"{self.detail}")


def queue(reports: Sequence[AccountReport], coordinators: Coordinators, mail: MailSettings,
          now: datetime) -> tuple[int, list[MonthlyDelivery]]:
    """Rows for every coordinator of every reported account (those already there stay as
    they are); (how many were written, the coordinators without an address)."""
    written, lost = 0, []
    for report in reports:
        for user in coordinators.of(report.account):
            recipient = recipient_for(user, mail)
            if recipient is None:
                lost.append(MonthlyDelivery(
                    report.account, user, Outcome.NO_ADDRESS,
                    "no email address: none in the monitor's account and no "
                    "CLUSTERWATCH_EMAIL_DOMAIN"))
                continue
            _row, created = monthly_outbox.enqueue(report.figures.month, report.account,
                                                   user=user, recipient=recipient, now=now)
            written += created
    return written, lost


def send_due(reports: Sequence[AccountReport], month: str, mail: MailSettings,
             password: str, now: datetime, account: Optional[str] = None
             ) -> list[MonthlyDelivery]:
    by_account: Mapping[str, AccountReport] = {report.account: report for report in reports}
    results = []
    with SmtpLink(password) as link:
        for row_id in monthly_outbox.due(month, now, account):
            row = monthly_outbox.claim(row_id, now)
            if row is None:
                held = MonthlyMail.objects.filter(id=row_id).values_list(
                    "account", "user").first() or ("?", "?")
                results.append(MonthlyDelivery(held[0], held[1], Outcome.BUSY,
                                               "another run has it, or has just sent it"))
                continue
            try:
                results.append(_send(row, by_account.get(row.account), mail, password, now,
                                     link))
            except BaseException:
                monthly_outbox.release(row)  # an interrupt: the row goes back as it was
                raise
    return results


def _send(row: MonthlyMail, report: Optional[AccountReport], mail: MailSettings,
          password: str, now: datetime, link: SmtpLink) -> MonthlyDelivery:
    if report is None:  # its kept jobs are gone (deleted by hand): nothing to report
        why = f"no kept job of account {row.account} ran in {row.month} any more"
        monthly_outbox.give_up(row, why)
        return MonthlyDelivery(row.account, row.user, Outcome.FAILED, why)
    content = compose(report, greeting=greeting_name(row.user), base_url=mail.base_url)
    try:
        link.send(build_message(content, row, sender=mail.sender))
    except ValueError as exc:
        # The row makes no email (an address Django cannot parse, a header it refuses: a
        # row damaged by hand); raised, it would stop this run and every later one at it.
        why = f"the email cannot be made: {exc}"
        monthly_outbox.give_up(row, why)
        return MonthlyDelivery(row.account, row.user, Outcome.FAILED, why)
    except (smtplib.SMTPException, OSError) as exc:
        error = smtp_error(exc, password)
        state = monthly_outbox.failed_attempt(row, error, now)
        outcome = Outcome.FAILED if state == MonthlyMail.FAILED else Outcome.RETRY
        return MonthlyDelivery(row.account, row.user, outcome, error)
    monthly_outbox.sent(row, now)
    return MonthlyDelivery(row.account, row.user, Outcome.SENT, f"to {row.recipient}")
