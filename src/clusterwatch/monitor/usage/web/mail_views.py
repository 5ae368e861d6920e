"""`GET /mail/<jobid>`: the end-of-job email as its recipient reads it.

The HTML part shown in the page, the text part in a <pre>, the subject and the attachment's
name. The same access rules and refusals as the API (answers.fetch_report): 400 for a
malformed job id, 403 for an anonymous client, 404 for an unknown job and for someone else's
alike, 503 when accounting or Prometheus fails; each a plain page, never a 500.
"""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.safestring import mark_safe

from clusterwatch.monitor.core.view_guard import guarded, reads_dates
from clusterwatch.monitor.usage.mail.message import attachment_name, compose
from clusterwatch.monitor.usage.mail.recipient import greeting_name
from clusterwatch.monitor.usage.mail.settings import settings_of
from clusterwatch.monitor.usage.peer_ranks import peer_ranks_of
from clusterwatch.monitor.usage.web.page_views import JOB_HINTS, PAGES_OFF, problem_page
from clusterwatch.monitor.usage.web.report_answers import fetch_report

TEMPLATE = "usage/mail.html"
HINTS = {**JOB_HINTS, 403: "Log in at /accounts/login/ to read the emails of your jobs."}


# No login page first: fetch_report's 403 page says how to log in (a token reads it too).
@reads_dates()
@guarded(problem_page(HINTS), feature=PAGES_OFF)
def mail_page(request: HttpRequest, jobid: str) -> HttpResponse:
    report = fetch_report(request, jobid, with_series=False)
    document = report.document
    # Without CLUSTERWATCH_EMAIL_BASE_URL the links point where this page was asked from.
    base_url = settings_of(settings).base_url or request.build_absolute_uri("/")
    content = compose(document, greeting=greeting_name(document["user"]), base_url=base_url,
                      ranks=peer_ranks_of(document))
    return render(request, TEMPLATE, {
        "jobid": document["jobid"], "subject": content.subject, "text": content.text,
        # Built by mail_html, which escapes every value it puts in.
        "html_body": mark_safe(content.html_body),  # noqa: S308
        "attachment": attachment_name(document["jobid"]), "running": document["running"],
    })

