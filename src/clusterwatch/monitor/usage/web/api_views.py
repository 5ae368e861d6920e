"""The JSON API of the usage reports (all GET): a job's document and a user's jobs."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.http import HttpRequest
from django.utils import timezone

from clusterwatch.monitor.core.asking import LOGIN_NEEDED, asker
from clusterwatch.monitor.core.refusals import Refusal
from clusterwatch.monitor.core.view_guard import reads_dates
from clusterwatch.monitor.usage.accounting.interface import USER_NAME_PATTERN, AccountingError
from clusterwatch.monitor.usage.peer_ranks import with_peer_ranks
from clusterwatch.monitor.usage.web.access import may_see_user
from clusterwatch.monitor.usage.web.list_params import BadParameter, days_back
from clusterwatch.monitor.usage.web.report_answers import (
    accounting_refusal,
    fetch_report,
    json_view,
)
from clusterwatch.monitor.usage.web.user_jobs import user_jobs

USERNAME_RE = USER_NAME_PATTERN
DEFAULT_DAYS = 30


@reads_dates()
@json_view
def job_usage(request: HttpRequest, jobid: str) -> Any:
    """GET /api/v1/jobs/<jobid>/usage: the same document as `clusterwatch monitor job_usage`,
    with the job's `peer_ranks` (computed now, never kept)."""
    return with_peer_ranks(fetch_report(request, jobid, with_series=False).document)


@reads_dates("days")
@json_view
def user_usage(request: HttpRequest, username: str) -> Any:
    """GET /api/v1/users/<username>[?days=N]: the user's jobs with their summaries."""
    user = asker(request)
    if user is None:
        raise Refusal(403, LOGIN_NEEDED)
    if not USERNAME_RE.fullmatch(username):
        raise Refusal(400, f"not a user name: {username[:40]!r}")
    if not may_see_user(user, username):
        raise Refusal(404, "no user with this name whose jobs you may see")
    since = since_of(request)
    try:
        jobs = user_jobs(username, since)
    except AccountingError as exc:
        raise accounting_refusal(exc) from None
    # `cut`: accounting had more jobs since then than one answer reads; these are the
    # newest `limit`. `unreadable`: lines accounting printed that could not be read.
    return {"user": username, "since": since.isoformat().replace("+00:00", "Z"),
            "jobs": jobs, "limit": jobs.limit, "cut": jobs.cut,
            "unreadable": [{"jobid": lost.jobid, "reason": lost.reason}
                           for lost in jobs.unreadable]}


def since_of(request: HttpRequest) -> datetime:
    """`?days=N` (1-366, default 30) back from now; a Refusal (400) for anything else."""
    try:
        days = days_back(dict(request.GET.lists()), DEFAULT_DAYS)
    except BadParameter as exc:
        raise Refusal(400, str(exc)) from None
    now: datetime = timezone.now()
    return now - timedelta(days=days)
