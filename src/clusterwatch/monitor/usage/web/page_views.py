"""The pages a researcher reads: one job's report, a user's jobs, and the staff's list of the
least efficient recent jobs. Plain HTML, no JavaScript, like the monitor's pages.

Thin: each view checks who asks, reads its source and hands the data to a pure builder
(job_view, user_view, staff_rows). Every failure is a page of its own, never a 500: 400 for
a malformed job id, user name or parameter; 404 alike for an unknown job and one the asker
may not see (and for another user's list, and the staff page to non-staff); 503 when
accounting or Prometheus fails. Anonymous visitors go to the login page.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Callable, TypeVar

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from clusterwatch.monitor.core.refusals import Refusal
from clusterwatch.monitor.core.view_guard import Entry, Feature, guarded, reads_dates
from clusterwatch.monitor.usage.accounting.interface import AccountingError
from clusterwatch.monitor.usage.analysis.rules import CODES
from clusterwatch.monitor.usage.config import usage_enabled
from clusterwatch.monitor.usage.peer_ranks import peer_ranks_of, rank_lines
from clusterwatch.monitor.usage.web.access import may_see_user
from clusterwatch.monitor.usage.web.api_views import USERNAME_RE
from clusterwatch.monitor.usage.web.job_page import job_view
from clusterwatch.monitor.usage.web.job_rows import PAGE_SIZE
from clusterwatch.monitor.usage.web.list_params import (
    BadParameter,
    Params,
    staff_query,
    user_query,
)
from clusterwatch.monitor.usage.web.report_answers import accounting_refusal, fetch_report
from clusterwatch.monitor.usage.web.row_markup import user_rows
from clusterwatch.monitor.usage.web.share_rows import sharing_of
from clusterwatch.monitor.usage.web.staff_rows import STAFF_ROWS, least_efficient
from clusterwatch.monitor.usage.web.user_jobs import user_jobs
from clusterwatch.monitor.usage.web.user_page import user_view

NO_SUCH_USER = "no user with this name whose jobs you may see"
NO_SUCH_PAGE = "no such page"
TITLES = {400: "Not a valid request", 404: "Not found", 503: "Not available right now"}
# What the reader can do about each answer, by page.
SOURCES_DOWN = ("This is a problem of the monitor's sources, not of your job: try again in a "
                "few minutes, and tell the cluster's staff if it lasts.")
JOB_HINTS = {
    400: "Check the address: a job id is a number such as 4242, 4242_7 (an array task) or "
         "4242+1 (a heterogeneous job's part).",
    404: "Check the job id. You see your own jobs; staff see every job.",
    503: SOURCES_DOWN,
}
LIST_HINTS = {
    400: "Check the address, or choose the filter again with the page's form.",
    404: "Check the user name. You see your own jobs; staff see everyone's.",
    503: SOURCES_DOWN,
}

View = Callable[..., HttpResponse]
Query = TypeVar("Query")


def usage_page(hints: Mapping[int, str]) -> Callable[[View], View]:
    """A page: 404 when the usage reports are off, the login page for anonymous visitors,
    GET and HEAD only, its Refusals shown as pages with their status and `hints`, and
    every answer kept by no cache (one person's report, as the API's)."""
    return guarded(problem_page(hints), feature=PAGES_OFF, entry=Entry.LOGGED_IN)


def problem_page(hints: Mapping[int, str]) -> Callable[[HttpRequest, Refusal], HttpResponse]:
    """The pages' dialect for the view guard: a Refusal as a problem page with its hint."""
    return lambda request, refusal: problem(request, refusal, hints.get(refusal.status, ""))


REPORTS_OFF = "the usage reports are off on this monitor"


def _off_page(request: HttpRequest) -> HttpResponse:
    # No hint: nothing the reader can do about it.
    return problem(request, Refusal(404, REPORTS_OFF), "")


PAGES_OFF = Feature(usage_enabled, _off_page)


def problem(request: HttpRequest, refusal: Refusal, next_step: str) -> HttpResponse:
    return render(request, "usage/problem.html", {
        "title": TITLES.get(refusal.status, "Not available"), "message": refusal.message,
        "next_step": next_step, "status": refusal.status,
        "links": request.user.is_authenticated and usage_enabled(),
    }, status=refusal.status)


@reads_dates()
@usage_page(JOB_HINTS)
def job_page(request: HttpRequest, jobid: str) -> HttpResponse:
    """/usage/jobs/<jobid>/: what the job asked for and used, the advice and the plots."""
    report = fetch_report(request, jobid, with_series=True, listing_plots=True)
    ranks = peer_ranks_of(report.document)
    return render(request, "usage/job.html", {
        "job": job_view(report), "peer_ranks": ranks, "rank_lines": rank_lines(ranks),
        "sharing": sharing_of(request.user, report, timezone.now())})


@reads_dates("since", "until", "days")
@usage_page(LIST_HINTS)
def user_page(request: HttpRequest, username: str) -> HttpResponse:
    """/usage/users/<username>/?days=N|since=&until=&state=&sort=&order=&page=."""
    if not USERNAME_RE.fullmatch(username):
        raise Refusal(400, f"not a user name: {username[:40]!r}")
    if not may_see_user(request.user, username):
        raise Refusal(404, NO_SUCH_USER)
    query = _query(user_query, request)
    try:
        documents = user_jobs(username, query.since)
    except AccountingError as exc:
        raise accounting_refusal(exc) from None
    view = user_view(username, documents, query, PAGE_SIZE,
                     cut_at=documents.limit if documents.cut else None,
                     unreadable=[lost.jobid for lost in documents.unreadable])
    return render(request, "usage/user.html", {"view": view, "rows": user_rows(view.rows)})


@reads_dates("days")
@usage_page(LIST_HINTS)
def staff_page(request: HttpRequest) -> HttpResponse:
    """/usage/staff/?days=N&sort=cpu_efficiency|memory_efficiency&warning=CODE (staff only)."""
    if not request.user.is_staff:
        raise Refusal(404, NO_SUCH_PAGE)
    query = _query(staff_query, request)
    return render(request, "usage/staff.html", {
        "query": query, "listing": least_efficient(query), "codes": CODES,
        "shown": STAFF_ROWS})


def _query(parse: Callable[[Params, datetime], Query], request: HttpRequest) -> Query:
    """The page's parameters read by `parse`; a Refusal (400) naming the bad one."""
    try:
        return parse(dict(request.GET.lists()), timezone.now())
    except BadParameter as exc:
        raise Refusal(400, str(exc)) from None
