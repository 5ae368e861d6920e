"""usage_watch's outbox: one UsageAlert row per (job, rule), and how runs share it. The end-of-
job email's rules (mail/outbox.py), for a row of another model:

- A row is written (and committed) before any send is tried: a run that dies between the
  two, an SMTP server that is down, never loses the email. A (job, rule) is written once,
  whatever later runs find (a unique constraint; get_or_create reads again after a race),
  so its owner hears of it once.
- A run claims a row with one conditional UPDATE (pending, due, unclaimed or its claim
  expired); of two runs at once, whichever commits first wins, the other's UPDATE matches
  nothing, on SQLite and PostgreSQL alike.
- A failed send is tried again after 1, 2, 4 ... minutes (outbox.retry_delay), `failed`
  after outbox.MAX_ATTEMPTS; a run killed mid-send frees its claim after CLAIM_LEASE.
"""

from __future__ import annotations

import logging
import secrets
from datetime import datetime
from typing import Any, Optional

from django.db.models import Q

from clusterwatch.monitor.usage.mail.outbox import CLAIM_LEASE, MAX_ATTEMPTS, retry_delay
from clusterwatch.monitor.usage.models import UsageAlert

log = logging.getLogger("clusterwatch.monitor.usage.watch")

ERROR_LIMIT = 300


def enqueue(jobid: str, rule: str, *, now: datetime,
            **fields: Any) -> tuple[UsageAlert, bool]:
    """The (job, rule)'s row, and whether this call wrote it. Not inside an atomic block of
    ours, for the reason outbox.enqueue gives (SQLite's "database is locked")."""
    row: UsageAlert
    row, created = UsageAlert.objects.get_or_create(jobid=jobid, rule=rule, defaults={
        **fields, "next_attempt_at": now, "created_at": now, "last_seen_at": now})
    return row, bool(created)


def seen(ids: list[int], now: datetime) -> None:
    """The rows the run found broken again: the staff page lists them as broken now."""
    UsageAlert.objects.filter(id__in=ids).update(last_seen_at=now)


def due(now: datetime) -> list[int]:
    return list(UsageAlert.objects.filter(state=UsageAlert.PENDING, next_attempt_at__lte=now)
                .filter(_unclaimed(now)).order_by("next_attempt_at", "id")
                .values_list("id", flat=True))


def claim(row_id: int, now: datetime) -> Optional[UsageAlert]:
    """The row, ours for CLAIM_LEASE; None when another run has it or it is not due."""
    token = secrets.token_hex(16)
    rows = UsageAlert.objects.filter(id=row_id, state=UsageAlert.PENDING,
                                     next_attempt_at__lte=now).filter(_unclaimed(now))
    if rows.update(claim=token, claimed_until=now + CLAIM_LEASE) != 1:
        return None
    row: UsageAlert = UsageAlert.objects.get(id=row_id)
    return row


def sent(row: UsageAlert, now: datetime) -> None:
    _finish(row, state=UsageAlert.SENT, sent_at=now, last_error="")


def failed_attempt(row: UsageAlert, error: str, now: datetime) -> str:
    """A failed try: retried later, or `failed` after MAX_ATTEMPTS. Returns the new state."""
    attempts = row.attempts + 1
    if attempts >= MAX_ATTEMPTS:
        log.error("usage_watch email of job %s (%s): gave up after %d attempts: %s",
                  row.jobid, row.rule, attempts, one_line(error))
        _finish(row, state=UsageAlert.FAILED, attempts=attempts, last_error=one_line(error))
        return UsageAlert.FAILED
    _finish(row, attempts=attempts, next_attempt_at=now + retry_delay(attempts),
            last_error=one_line(error))
    return UsageAlert.PENDING


def give_up(row: UsageAlert, why: str) -> None:
    _finish(row, state=UsageAlert.FAILED, last_error=one_line(why))


def release(row: UsageAlert) -> None:
    """The claim back, the row untouched (the run stops before deciding)."""
    _finish(row)


def _finish(row: UsageAlert, **changes: object) -> None:
    # Only while the claim is still ours (outbox._finish says why).
    UsageAlert.objects.filter(id=row.id, claim=row.claim).update(
        claim="", claimed_until=None, **changes)


def _unclaimed(now: datetime) -> Q:
    return Q(claimed_until__isnull=True) | Q(claimed_until__lt=now)


def one_line(text: str) -> str:
    one = " ".join(text.split())
    return one if len(one) <= ERROR_LIMIT else one[:ERROR_LIMIT - 1] + "…"
