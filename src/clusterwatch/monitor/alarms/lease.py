"""One alarm run at a time, across every host that shares the database.

Several monitor hosts behind a proxy each run `evaluate_alarms` from a timer. Two runs at
once could both send the same batch, or one could overwrite the outbox the other just
advanced. The lease is one row: taking it is a conditional UPDATE (free, expired, or ours),
which both SQLite and PostgreSQL apply atomically, so only one run wins. Each transaction of
a run begins by renewing it, which on PostgreSQL locks the row until the commit and on
SQLite takes the write lock before any read; a run that finds it lost (it ran past the
expiry and another took over) saves nothing.

A run killed on this host leaves a lease naming a process that no longer exists: the next
run here takes it over at once. One killed on another host blocks runs until it expires.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import socket
import uuid
from dataclasses import dataclass
from typing import Callable, Optional

from django.db.models import Q

from clusterwatch.monitor.core.models import AlarmRunLease

log = logging.getLogger(__name__)

NAME = "alarms"


class LeaseBusy(Exception):
    """Another run holds the lease; the message says who, since when and until when."""


def this_holder() -> str:
    return f"{socket.gethostname()}/{os.getpid()}/{uuid.uuid4().hex[:8]}"


def describe(holder: str) -> str:
    host, _, rest = holder.partition("/")
    pid, _, run = rest.partition("/")
    return f"host {host}, pid {pid}, run {run}" if run else holder or "nobody"


def _dead_here(holder: str) -> bool:
    """True when `holder` is a process of this host that no longer exists."""
    host, _, rest = holder.partition("/")
    pid_text = rest.partition("/")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return False  # this very process: an earlier run in it that did not let go
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # exists, another user's
    return False


def _utc(t: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(t, tz=dt.timezone.utc)


@dataclass
class Lease:
    ttl_s: float
    clock: Callable[[], float]
    holder: str = ""

    def __post_init__(self) -> None:
        self.holder = self.holder or this_holder()

    def acquire(self) -> None:
        """Take the lease or raise LeaseBusy."""
        AlarmRunLease.objects.get_or_create(name=NAME)
        now = self.clock()
        taken = AlarmRunLease.objects.filter(
            Q(expires_at__isnull=True) | Q(expires_at__lte=_utc(now)) | Q(holder=self.holder),
            name=NAME,
        ).update(holder=self.holder, acquired_at=_utc(now), expires_at=_utc(now + self.ttl_s))
        if taken:
            return
        current = AlarmRunLease.objects.get(name=NAME)
        if _dead_here(current.holder) and AlarmRunLease.objects.filter(
            name=NAME, holder=current.holder,
        ).update(holder=self.holder, acquired_at=_utc(now), expires_at=_utc(now + self.ttl_s)):
            log.warning("took over the alarm lease from %s, which no longer runs (killed?); "
                        "its undelivered messages are sent again", describe(current.holder))
            return
        raise LeaseBusy(_busy_message(current))

    def renew(self) -> bool:
        """Extend the lease if it is still ours; False if another run took it."""
        now = self.clock()
        return bool(AlarmRunLease.objects.filter(name=NAME, holder=self.holder).update(
            expires_at=_utc(now + self.ttl_s)))

    def release(self) -> None:
        AlarmRunLease.objects.filter(name=NAME, holder=self.holder).update(
            holder="", expires_at=_utc(self.clock()))


def current_holder() -> Optional[AlarmRunLease]:
    """The lease row while someone holds it (for status), else None."""
    lease: Optional[AlarmRunLease] = AlarmRunLease.objects.filter(name=NAME).first()
    if lease is None or not lease.holder:
        return None
    return lease


def _busy_message(current: AlarmRunLease) -> str:
    since = f"{current.acquired_at:%Y-%m-%d %H:%M:%SZ}" if current.acquired_at else "?"
    until = f"{current.expires_at:%Y-%m-%d %H:%M:%SZ}" if current.expires_at else "?"
    return (f"another alarm run holds the lease ({describe(current.holder)}, since {since}, "
            f"until {until} at the latest)")
