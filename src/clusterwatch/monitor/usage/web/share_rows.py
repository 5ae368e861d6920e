"""The job page's "Share this report" section, for the job's owner: the form's action and
lifetimes, and the owner's links to the job that still open (each revocable there).

A link's secret is never shown again after it was made: a row names it by its prefix.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Optional

from django.urls import reverse

from clusterwatch.monitor.usage import share_links
from clusterwatch.monitor.usage.share_links import DAY_CHOICES, DEFAULT_DAYS
from clusterwatch.monitor.usage.usage_report import UsageReport


@dataclass(frozen=True)
class LinkRow:
    id: int
    prefix: str
    created: str
    expires: str
    last_used: str


@dataclass(frozen=True)
class Sharing:
    action: str  # the POST's path
    day_choices: tuple[int, ...]
    default_days: int
    links: tuple[LinkRow, ...]


def sharing_of(user: Any, report: UsageReport, now: datetime) -> Optional[Sharing]:
    """The section when `user` (a session's) is the job's user, exactly; None otherwise:
    staff and the account's members read the page but make no link."""
    jobid = report.document["jobid"]
    if not user.is_authenticated or report.document["user"] != user.get_username():
        return None
    rows = tuple(LinkRow(link.id, link.prefix, when_text(link.created_at),
                         when_text(link.expires_at),
                         when_text(link.last_used_at) if link.last_used_at else "never")
                 for link in share_links.live_links(jobid, user, now))
    return Sharing(reverse("usage-job-share", kwargs={"jobid": jobid}), DAY_CHOICES,
                   DEFAULT_DAYS, rows)


def when_text(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
