"""The job page's sharing: its owner makes a link to the job's report (`share_links`), shown
once, and revokes their own links.

`POST /usage/jobs/<jobid>/share` with Django's CSRF token (the middleware refuses a POST
without it, 403, before this view runs), from a login session only: `days=N` makes a link
valid N days (1 to 30, 7 by default) and answers a page that shows it once; `revoke=<id>`
revokes one of the owner's links to the job and sends back to the job page. Anything but a
POST is 405 (`Allow: POST`).

Only the job's owner: its user, exactly. Not a member of its account, not staff: a link
takes the report out of the monitor, to whoever holds it, and that is for its owner to
decide (staff revoke links in the admin, and see every report themselves). Anyone else gets
the page's answer for an unknown job, byte for byte, after the same accounting lookup
(`report_answers.owned_by`), so this path tells no more than the page does.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone

from clusterwatch.monitor.core.refusals import Refusal, kept_private
from clusterwatch.monitor.core.view_guard import reads_dates
from clusterwatch.monitor.usage import share_links
from clusterwatch.monitor.usage.config import usage_enabled
from clusterwatch.monitor.usage.models import ShareLink
from clusterwatch.monitor.usage.share_links import DEFAULT_DAYS, BadDays
from clusterwatch.monitor.usage.usage_report import UsageReport
from clusterwatch.monitor.usage.web.page_views import JOB_HINTS, REPORTS_OFF, problem
from clusterwatch.monitor.usage.web.report_answers import owned_by, report_or_refusal
from clusterwatch.monitor.usage.web.share_rows import when_text


@reads_dates()
def share(request: HttpRequest, jobid: str) -> HttpResponse:
    """The owner's POST: make a link (`days`) or revoke one (`revoke`)."""
    if request.method != "POST":
        return kept_private(HttpResponseNotAllowed(["POST"]))
    if not usage_enabled():
        return kept_private(problem(request, Refusal(404, REPORTS_OFF), ""))
    page = reverse("usage-job", kwargs={"jobid": jobid})
    if not request.user.is_authenticated:
        return kept_private(redirect_to_login(page))
    try:
        report = report_or_refusal(jobid, owned_by(request.user.get_username()),
                                   with_series=False)
        if "revoke" in request.POST:
            return kept_private(_revoke(request, report, page))
        return kept_private(_make(request, report))
    except Refusal as refusal:
        return kept_private(problem(request, refusal, JOB_HINTS.get(refusal.status, "")))


def _make(request: HttpRequest, report: UsageReport) -> HttpResponse:
    try:
        days = share_links.days_of(request.POST.get("days", str(DEFAULT_DAYS)))
    except BadDays as exc:
        raise Refusal(400, str(exc)) from None
    now = timezone.now()
    link, token = share_links.make(report.document["jobid"], request.user, days, now)
    answer = render(request, "usage/share_made.html", {
        "jobid": report.document["jobid"],
        "url": request.build_absolute_uri(share_links.shared_path(token)),
        "expires": when_text(link.expires_at), "days": days,
        "page": reverse("usage-job", kwargs={"jobid": report.document["jobid"]})})
    answer["Referrer-Policy"] = "no-referrer"  # the page holds the link
    return answer


def _revoke(request: HttpRequest, report: UsageReport, page: str) -> HttpResponse:
    text = request.POST.get("revoke", "")
    if not (text.isascii() and text.isdigit() and len(text) <= 18):
        raise Refusal(400, "not a link of this job")
    mine = ShareLink.objects.filter(pk=int(text), jobid=report.document["jobid"],
                                    made_by=request.user)
    if share_links.revoke(mine, request.user, timezone.now()):
        messages.success(request, "The link is revoked: it opens nothing any more.")
    else:
        messages.info(request, "That link was revoked already, or was not yours.")
    return HttpResponseRedirect(f"{page}#sharing", status=303)
