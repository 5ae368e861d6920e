"""What a share link opens (`share_links`): `/usage/shared/<token>/`, the job's page, and
under it `pdf`, `pie` and `plot/<metric>`, the PDF and the drawings that page shows; to
whoever holds the link, with no login, and nothing else.

- No session and no header is looked at: a visitor logged in as anyone, or sending any
  token or MUNGE credential, gets exactly what a stranger gets. The page is rendered without
  the request's context, so it has no navigation, no user or account link, no form, no CSRF
  token and no message meant for the visitor; its only links are those under the link.
- A wrong, malformed, expired or revoked token, a link whose maker is no longer active or no
  longer the job's user, and a job accounting no longer knows: one 404, byte for byte, the
  same on every path of the link (`GONE`), and on every other path under /usage/shared/
  (`no_such_path`: Django's own 404 would be logged with its path, the token in it). A
  source down is 503 in one line (only a good link gets that far). Anything but GET or HEAD is 405.
- The token is in the URL, so every answer is `Cache-Control: private, no-store`,
  `Referrer-Policy: no-referrer` (the plots' requests and a click away do not carry it) and
  `X-Robots-Tag: noindex`; and none is written to the monitor's log by Django (its request
  logger names the path of every 5xx: these answers are marked as logged already; an error
  is logged here without the path). gunicorn's access log redacts it
  (`site/access_log.py`).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Set
from datetime import datetime
from typing import Callable, Optional

from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.utils import timezone

from clusterwatch.monitor.core.refusals import Refusal, kept_private, text_refusal
from clusterwatch.monitor.core.view_guard import SAFE_METHODS, reads_dates
from clusterwatch.monitor.usage import share_links
from clusterwatch.monitor.usage.config import usage_enabled
from clusterwatch.monitor.usage.peer_ranks import peer_ranks_of, rank_lines
from clusterwatch.monitor.usage.share_links import Opened
from clusterwatch.monitor.usage.usage_report import UsageReport
from clusterwatch.monitor.usage.web.job_page import ReportPaths, job_view
from clusterwatch.monitor.usage.web.render_views import (
    pdf_answer,
    pie_answer,
    plot_answer,
    plot_keys,
)
from clusterwatch.monitor.usage.web.report_answers import owned_by, report_or_refusal
from clusterwatch.monitor.usage.web.share_rows import when_text

log = logging.getLogger(__name__)

GONE_TEXT = ("No such shared report: the link is wrong, has expired or was revoked. Ask "
             "whoever sent it for a new one.\n")
Body = Callable[..., HttpResponse]
# The views' clock: tests move it instead of waiting for a link to expire.
clock: Callable[[], datetime] = timezone.now


def gone() -> HttpResponse:
    """The one answer for every link that opens nothing."""
    return HttpResponse(GONE_TEXT, status=404, content_type="text/plain; charset=utf-8")


def untraced(answer: HttpResponse) -> HttpResponse:
    """An answer to a path that holds a token: no cache, no referrer, no index, no log."""
    kept_private(answer)
    answer["Referrer-Policy"] = "no-referrer"
    answer["X-Robots-Tag"] = "noindex, nofollow"
    # Django's request logger skips an answer marked so (django.utils.log.log_response).
    answer._has_been_logged = True
    return answer


@reads_dates()
def no_such_path(request: HttpRequest, rest: str) -> HttpResponse:
    """A path under /usage/shared/ that names no page of a link: the same 404 as a wrong
    link's, untraced (it may hold a token)."""
    return untraced(gone())


def through_link(body: Body) -> Callable[..., HttpResponse]:
    """A view of the link's: `body(request, opened, ...)` runs only for a link that opens."""

    @functools.wraps(body)
    def view(request: HttpRequest, token: str, **kwargs: str) -> HttpResponse:
        return untraced(_answer(request, token, **kwargs))

    def _answer(request: HttpRequest, token: str, **kwargs: str) -> HttpResponse:
        if request.method not in SAFE_METHODS:
            refused = text_refusal(request, Refusal(405, "only GET"))
            refused["Allow"] = ", ".join(SAFE_METHODS)
            return refused
        if not usage_enabled():
            return gone()
        try:
            opened = share_links.open_link(token, clock())
            if opened is None:
                return gone()
            answer = body(request, opened, **kwargs)
            share_links.mark_used(opened.link, clock())
            return answer
        except Refusal as refusal:
            return gone() if refusal.status in (400, 404) else text_refusal(request, refusal)
        except Exception:
            log.exception("usage reports: a shared report failed (its link is not logged)")
            return HttpResponse("the monitor failed on this report; its log says why\n",
                                status=500, content_type="text/plain; charset=utf-8")

    return view


def _report(opened: Opened, *, with_series: bool, series_keys: Optional[Set[str]] = None,
            listing_plots: bool = False) -> UsageReport:
    return report_or_refusal(opened.link.jobid, owned_by(opened.owner), with_series=with_series,
                             series_keys=series_keys, listing_plots=listing_plots)


@reads_dates()
@through_link
def shared_page(request: HttpRequest, opened: Opened) -> HttpResponse:
    report = _report(opened, with_series=True, listing_plots=True)
    ranks = peer_ranks_of(report.document)
    # No request context: nothing of the visitor's (session, messages, CSRF) is in the page.
    page = render_to_string("usage/shared.html", {
        "job": job_view(report, ReportPaths(opened.path)),
        "peer_ranks": ranks, "rank_lines": rank_lines(ranks),
        "expires": when_text(opened.link.expires_at),
        # Every name the templates read, so that none is looked up and missed: Django's
        # template logger writes the whole context, links included, of a missed one.
        "messages": ()})
    return HttpResponse(page)


@reads_dates()
@through_link
def shared_pdf(request: HttpRequest, opened: Opened) -> HttpResponse:
    return pdf_answer(_report(opened, with_series=True))


@reads_dates()
@through_link
def shared_pie(request: HttpRequest, opened: Opened) -> HttpResponse:
    return pie_answer(_report(opened, with_series=False))


@reads_dates()
@through_link
def shared_plot(request: HttpRequest, opened: Opened, metric: str) -> HttpResponse:
    keys = plot_keys(metric)
    return plot_answer(_report(opened, with_series=True, series_keys=keys), metric)

