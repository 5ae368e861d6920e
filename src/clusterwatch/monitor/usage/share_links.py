"""Links that share one job's report: made by the job's owner for a support ticket, opened by
whoever holds them, without a login, until they expire or are revoked.

A link is `/usage/shared/cws_<8>_<43>/`: a token of the kernel's kind (`core.tokens`) with a
scheme of its own, so neither an API token nor a host token is ever taken for one. Why a
random secret with its digest in the row, rather than Django's signing over the row's id:
the row is needed anyway (revocation, expiry chosen by the owner, last use), and with it a
signature adds nothing but a weakness: a signed id is as good as the SECRET_KEY, so whoever
reads the key (a backup of the settings, a debug page) can forge a link to any job, and a
key rotation would break every link at once. A random secret is forgeable by nobody; the
table holds only its SHA-256 digest (as for API tokens: random, so no slow hash needed), so
a copy of the database opens nothing either. The comparison is constant-time, and an
unknown prefix costs the same work as a known one.

What a link opens is decided again at every use: the job must still be its maker's (their
account active, the job's user exactly their name), the link neither revoked nor expired.
Wrong, expired and revoked links are one answer (the views'): nothing tells them apart.
Functions take `now`, so tests move a clock instead of waiting.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Optional

from django.db.models import QuerySet

from clusterwatch.monitor.core.tokens import issue, matches, token_pattern
from clusterwatch.monitor.usage.models import ShareLink

SCHEME = "cws_"
TOKEN_RE = token_pattern(SCHEME)
TOKEN_LENGTH = len(SCHEME) + 8 + 1 + 43
DEFAULT_DAYS = 7
MAX_DAYS = 30
DAY_CHOICES = (1, 3, 7, 14, 30)  # the job page's menu; the command takes any 1..MAX_DAYS
SHARED_ROOT = "/usage/shared/"


class BadDays(ValueError):
    """A lifetime outside 1..MAX_DAYS days."""


@dataclass(frozen=True)
class Opened:
    """A link that opens now: its row, the name of the user whose job it shows, and its
    page's path (which holds the token: never in a repr)."""

    link: ShareLink
    owner: str
    path: str = field(repr=False)


def shared_path(token: str) -> str:
    """The link's page; its PDF and drawings are under it."""
    return f"{SHARED_ROOT}{token}/"


def days_of(text: str) -> int:
    """A lifetime in whole days as a form or the command line gives it; BadDays otherwise."""
    text = text.strip()
    if not (text.isascii() and text.isdigit() and len(text) <= 2):
        raise BadDays(f"the link's lifetime must be 1 to {MAX_DAYS} days")
    return checked_days(int(text))


def checked_days(days: int) -> int:
    if not 1 <= days <= MAX_DAYS:
        raise BadDays(f"the link's lifetime must be 1 to {MAX_DAYS} days")
    return days


def make(jobid: str, owner: Any, days: int, now: datetime) -> tuple[ShareLink, str]:
    """A new link to `jobid`'s report made by `owner` (who the caller found owns the job),
    valid `days` days from `now`; (row, token), the token returned once and never kept."""
    checked_days(days)

    def store(prefix: str, digest: str) -> ShareLink:
        row: ShareLink = ShareLink.objects.create(
            jobid=jobid, made_by=owner, prefix=prefix, digest=digest, created_at=now,
            expires_at=now + timedelta(days=days))
        return row

    return issue(SCHEME, store)


def open_link(token: str, now: datetime) -> Optional[Opened]:
    """The link `token` names if it opens at `now`: known, its secret right, not revoked, not
    expired, its maker active. None for anything else, whatever it is."""
    if len(token) != TOKEN_LENGTH:
        return None
    match = TOKEN_RE.fullmatch(token)
    if match is None:
        return None
    row = ShareLink.objects.select_related("made_by").filter(prefix=match.group(1)).first()
    found = matches(row.digest if row is not None else None, token)
    if row is None or not found or row.revoked_at is not None or row.expires_at <= now:
        return None
    if not row.made_by.is_active:
        return None
    return Opened(row, row.made_by.get_username(), shared_path(token))


def mark_used(link: ShareLink, now: datetime) -> None:
    ShareLink.objects.filter(pk=link.pk).update(last_used_at=now)


def live_links(jobid: str, owner: Any, now: datetime) -> Sequence[ShareLink]:
    """The owner's links to the job that still open, newest first (the job page lists them)."""
    return list(ShareLink.objects.filter(jobid=jobid, made_by=owner, revoked_at=None,
                                         expires_at__gt=now).order_by("-created_at", "-id"))


def revoke(links: QuerySet[ShareLink], by: Any, now: datetime) -> int:
    """Revokes those of `links` not revoked yet, by `by`; how many were."""
    count: int = links.filter(revoked_at=None).update(revoked_at=now, revoked_by=by)
    return count
