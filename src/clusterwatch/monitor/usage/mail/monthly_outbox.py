"""The monthly account email's outbox: one MonthlyMail row per (month, account, coordinator),
under the end-of-job outbox's rules (mail/outbox.py), so each coordinator gets each month's
report of each account once, whatever happens:

- the row is written (and committed) before any send is tried: a run that dies or an SMTP
  server that is down never loses the email, and a rerun the same day finds it sent;
- a run claims a row with one conditional UPDATE (pending, unclaimed or its claim expired,
  due); of two runs at once the second's UPDATE matches nothing, on SQLite as on PostgreSQL;
  a claim lasts CLAIM_LEASE, so a run killed mid-send frees its rows;
- a failed send is tried again after 1, 2, 4 ... minutes (at most 2 hours apart) by the next
  run; after MAX_ATTEMPTS failures the row is `failed` and an error is logged.
"""

from __future__ import annotations

import logging
import secrets
from datetime import datetime
from typing import Optional

from django.db.models import Q

from clusterwatch.monitor.usage.mail.outbox import (
    CLAIM_LEASE,
    ERROR_LIMIT,
    MAX_ATTEMPTS,
    retry_delay,
)
from clusterwatch.monitor.usage.models import MonthlyMail

log = logging.getLogger("clusterwatch.monitor.usage.mail")


def enqueue(month: str, account: str, *, user: str, recipient: str,
            now: datetime) -> tuple[MonthlyMail, bool]:
    """The row, and whether this call wrote it. No atomic block of ours around it (as
    outbox.enqueue: a transaction that read, then wrote, fails on SQLite when another
    process committed in between)."""
    row: MonthlyMail
    row, created = MonthlyMail.objects.get_or_create(
        month=month, account=account[:64], user=user[:64],
        defaults={"recipient": recipient[:254], "next_attempt_at": now, "created_at": now})
    return row, bool(created)


def due(month: str, now: datetime, account: Optional[str] = None) -> list[int]:
    """The month's rows to try now, by account and user."""
    rows = MonthlyMail.objects.filter(month=month, state=MonthlyMail.PENDING,
                                      next_attempt_at__lte=now).filter(_unclaimed(now))
    if account is not None:
        rows = rows.filter(account=account)
    return list(rows.order_by("account", "user").values_list("id", flat=True))


def claim(row_id: int, now: datetime) -> Optional[MonthlyMail]:
    """The row, now ours for CLAIM_LEASE; None when another run has it, or it was sent or
    is not due any more."""
    token = secrets.token_hex(16)
    taken = MonthlyMail.objects.filter(
        id=row_id, state=MonthlyMail.PENDING, next_attempt_at__lte=now).filter(
        _unclaimed(now)).update(claim=token, claimed_until=now + CLAIM_LEASE)
    if taken != 1:
        return None
    row: MonthlyMail = MonthlyMail.objects.get(id=row_id)
    return row


def sent(row: MonthlyMail, now: datetime) -> None:
    _finish(row, state=MonthlyMail.SENT, sent_at=now, last_error="")


def failed_attempt(row: MonthlyMail, error: str, now: datetime) -> str:
    """A failed try: due again after retry_delay, or `failed` after MAX_ATTEMPTS."""
    attempts = row.attempts + 1
    if attempts >= MAX_ATTEMPTS:
        log.error("monthly email of %s %s to %s: gave up after %d attempts: %s",
                  row.account, row.month, row.user, attempts, one_line(error))
        _finish(row, state=MonthlyMail.FAILED, attempts=attempts, last_error=one_line(error))
        return MonthlyMail.FAILED
    _finish(row, attempts=attempts, next_attempt_at=now + retry_delay(attempts),
            last_error=one_line(error))
    return MonthlyMail.PENDING


def give_up(row: MonthlyMail, why: str) -> None:
    log.error("monthly email of %s %s to %s: gave up: %s", row.account, row.month, row.user,
              one_line(why))
    _finish(row, state=MonthlyMail.FAILED, last_error=one_line(why))


def release(row: MonthlyMail) -> None:
    """The claim given back untouched (the run stops before deciding)."""
    _finish(row)


def one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= ERROR_LIMIT else line[:ERROR_LIMIT - 1] + "…"


def _finish(row: MonthlyMail, **changes: object) -> None:
    # Only while the claim is ours: a run whose lease ran out must not overwrite the outcome
    # of the run that took the row over.
    MonthlyMail.objects.filter(id=row.id, claim=row.claim).update(
        claim="", claimed_until=None, **changes)


def _unclaimed(now: datetime) -> Q:
    return Q(claimed_until__isnull=True) | Q(claimed_until__lt=now)
