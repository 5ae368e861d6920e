"""The end-of-job email's outbox: one UsageMail row per job, and how runs share it.

- A row is written (and committed) before any send is tried: a run that dies, an SMTP
  server that is down, never loses the email.
- A run claims a row with one conditional UPDATE (pending, due, unclaimed or its claim
  expired); whichever of two runs commits first wins and the other's UPDATE matches nothing.
  This works alike on SQLite and on PostgreSQL (which re-checks the WHERE of an UPDATE that
  waited for the row), so MailProg and the poller at once never send twice.
- A failed send is tried again after 1, 2, 4 ... minutes, at most RETRY_CAP apart; after
  MAX_ATTEMPTS failures (about three days) the row is `failed` and an error is logged.
  Waiting for the job to end or for its figures to be final is no failure.
"""

from __future__ import annotations

import logging
import secrets
from datetime import datetime, timedelta
from typing import Optional

from django.db.models import Q

from clusterwatch.monitor.usage.models import UsageMail

log = logging.getLogger("clusterwatch.monitor.usage.mail")

RETRY_FIRST = timedelta(minutes=1)
RETRY_CAP = timedelta(hours=2)
MAX_ATTEMPTS = 40  # 1+2+...+64 min, then every 2 h: the 40th failure is about 3 days in
CLAIM_LEASE = timedelta(minutes=10)  # far above one send; a run killed mid-send frees it
ERROR_LIMIT = 300


def enqueue(jobid: str, *, user: str, recipient: str, trigger: str,
            now: datetime) -> tuple[UsageMail, bool]:
    """The job's row, and whether this call wrote it (once per job, whoever asks)."""
    # Not inside an atomic block of ours: get_or_create reads, then inserts in a transaction
    # of its own and reads again if another run inserted first. A transaction that read and
    # then wrote would fail at once with "database is locked" on SQLite (WAL) whenever
    # another process committed in between, which MailProg and the poller do at a job's end.
    row: UsageMail
    row, created = UsageMail.objects.get_or_create(jobid=jobid, defaults={
        "user": user[:64], "recipient": recipient[:254], "trigger": trigger,
        "next_attempt_at": now, "created_at": now})
    return row, bool(created)


def asked_by_owner(row: UsageMail) -> None:
    """MailProg queues what the job's owner asked Slurm for: it wins over the poller's
    "warnings only", so a row the poller queued or skipped becomes MailProg's, pending."""
    UsageMail.objects.filter(id=row.id, trigger="poller").exclude(
        state__in=(UsageMail.SENT, UsageMail.FAILED)).update(trigger="mailprog",
                                                             state=UsageMail.PENDING)


def due(now: datetime) -> list[int]:
    """The rows to try now, oldest first."""
    return list(UsageMail.objects.filter(state=UsageMail.PENDING, next_attempt_at__lte=now)
                .filter(_unclaimed(now)).order_by("next_attempt_at", "id")
                .values_list("id", flat=True))


def claim(row_id: int, now: datetime, *, whenever: bool = False) -> Optional[UsageMail]:
    """The row, now ours for CLAIM_LEASE; None when another run has it or it is not due
    (`whenever`: due or not, for `--once`)."""
    token = secrets.token_hex(16)
    rows = UsageMail.objects.filter(id=row_id, state=UsageMail.PENDING).filter(_unclaimed(now))
    if not whenever:
        rows = rows.filter(next_attempt_at__lte=now)
    if rows.update(claim=token, claimed_until=now + CLAIM_LEASE) != 1:
        return None
    row: UsageMail = UsageMail.objects.get(id=row_id)
    return row


def take_over(row: UsageMail, now: datetime) -> None:
    """`--once` on a queued row: pending and due now, whatever queued it, one more try even
    when it had failed or been skipped."""
    UsageMail.objects.filter(id=row.id).exclude(state=UsageMail.SENT).update(
        state=UsageMail.PENDING, trigger="command", next_attempt_at=now,
        attempts=min(row.attempts, MAX_ATTEMPTS - 1))


def wait(row: UsageMail, until: datetime, why: str) -> None:
    """Not ready yet (the job runs, its figures are not final): no attempt counted."""
    _finish(row, next_attempt_at=until, last_error=_line(why))


def failed_attempt(row: UsageMail, error: str, now: datetime) -> str:
    """A failed try: retried later, or `failed` after MAX_ATTEMPTS. Returns the new state."""
    attempts = row.attempts + 1
    if attempts >= MAX_ATTEMPTS:
        log.error("end-of-job email of job %s to %s: gave up after %d attempts: %s",
                  row.jobid, row.recipient, attempts, _line(error))
        _finish(row, state=UsageMail.FAILED, attempts=attempts, last_error=_line(error))
        return UsageMail.FAILED
    delay = retry_delay(attempts)
    log.warning("end-of-job email of job %s: attempt %d failed, next in %s: %s",
                row.jobid, attempts, delay, _line(error))
    _finish(row, attempts=attempts, next_attempt_at=now + delay, last_error=_line(error))
    return UsageMail.PENDING


def give_up(row: UsageMail, why: str) -> None:
    log.error("end-of-job email of job %s: gave up: %s", row.jobid, _line(why))
    _finish(row, state=UsageMail.FAILED, last_error=_line(why))


def sent(row: UsageMail, now: datetime) -> None:
    _finish(row, state=UsageMail.SENT, sent_at=now, last_error="")


def skipped(row: UsageMail, why: str) -> None:
    _finish(row, state=UsageMail.SKIPPED, last_error=_line(why))


def readdress(row: UsageMail, user: str, recipient: str) -> None:
    """The job's owner instead of the user the row was queued for; the claim stays ours."""
    UsageMail.objects.filter(id=row.id, claim=row.claim).update(user=user[:64],
                                                                recipient=recipient[:254])


def release(row: UsageMail) -> None:
    """Give the claim back untouched (the run stops before deciding, e.g. on a config error)."""
    _finish(row)


def retry_delay(attempts: int) -> timedelta:
    """The wait after the `attempts`-th failure."""
    delay: timedelta = min(RETRY_FIRST * 2 ** (attempts - 1), RETRY_CAP)
    return delay


def _finish(row: UsageMail, **changes: object) -> None:
    # Only while the claim is still ours: a run whose lease ran out must not overwrite the
    # outcome of the run that took the row over.
    UsageMail.objects.filter(id=row.id, claim=row.claim).update(
        claim="", claimed_until=None, **changes)


def _unclaimed(now: datetime) -> Q:
    return Q(claimed_until__isnull=True) | Q(claimed_until__lt=now)


def _line(text: str) -> str:
    one = " ".join(text.split())
    return one if len(one) <= ERROR_LIMIT else one[:ERROR_LIMIT - 1] + "…"
