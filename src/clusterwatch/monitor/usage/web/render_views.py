"""The original's image and document endpoints: `/pdf/<jobid>`, `/pie/<jobid>/`,
`/plot/<jobid>/<metric>` (PNG; our metric names and the original's).

A browser without a session is sent to the login page (a researcher opens the PDF from the
email); a script sends its token. The drawing modules (matplotlib, reportlab: half a second of
import) are imported by the answers that draw, not with the URLs, so that a management
command, which loads every URL, starts without them; gunicorn's workers import them as they
start (site/wsgi.py). A refusal is a short text/plain answer with its status
(400 malformed job id or metric name, 403 a bad token, 404 unknown or not yours alike,
503 a source down), never a 500. Ended jobs' drawings come from the render cache.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse

from clusterwatch.monitor.core.refusals import Refusal, text_refusal
from clusterwatch.monitor.core.view_guard import Entry, Feature, guarded, reads_dates
from clusterwatch.monitor.usage.config import get_config, usage_enabled
from clusterwatch.monitor.usage.rendering.cache import RenderCache
from clusterwatch.monitor.usage.rendering.plot_metrics import UnknownMetric, series_keys
from clusterwatch.monitor.usage.usage_report import UsageReport
from clusterwatch.monitor.usage.web.report_answers import fetch_report

drawing = guarded(text_refusal, feature=Feature(usage_enabled, "the usage reports are off on "
                                                               "this monitor"),
                  entry=Entry.LOGGED_IN_OR_SCRIPT)


@reads_dates()
@drawing
def pdf(request: HttpRequest, jobid: str) -> HttpResponse:
    return pdf_answer(fetch_report(request, jobid, with_series=True))


@reads_dates()
@drawing
def pie(request: HttpRequest, jobid: str) -> HttpResponse:
    return pie_answer(fetch_report(request, jobid, with_series=False))


@reads_dates()
@drawing
def plot(request: HttpRequest, jobid: str, metric: str) -> HttpResponse:
    keys = plot_keys(metric)  # a bad name is refused before any source is asked
    # A kept job's plot reads only its metric's series (its cache key hashes those); a job
    # not kept yet reads all of them, for the analysis its document comes from.
    return plot_answer(fetch_report(request, jobid, with_series=True, series_keys=keys), metric)


# The answers themselves, for the job's own paths and a share link's alike (shared_views).

def pdf_answer(report: UsageReport) -> HttpResponse:
    from clusterwatch.monitor.usage.rendering import rendered

    body = rendered.report_pdf(_cache(), report.document, report.series, report.series_note)
    answer = HttpResponse(body, content_type="application/pdf")
    answer["Content-Disposition"] = f'inline; filename="job-{report.document["jobid"]}-usage.pdf"'
    return answer


def pie_answer(report: UsageReport) -> HttpResponse:
    from clusterwatch.monitor.usage.rendering import rendered

    return HttpResponse(rendered.pie_png(_cache(), report.document), content_type="image/png")


def plot_keys(metric: str) -> frozenset[str]:
    """The series `metric`'s plot reads; a Refusal (400) for a name that is none."""
    try:
        return series_keys(metric)
    except UnknownMetric as exc:
        raise Refusal(400, str(exc)) from None


def plot_answer(report: UsageReport, metric: str) -> HttpResponse:
    from clusterwatch.monitor.usage.rendering import rendered

    body = rendered.plot_png(_cache(), report.document, report.series, metric,
                             report.series_note)
    return HttpResponse(body, content_type="image/png")


def _cache() -> RenderCache:
    return RenderCache(get_config().cache_dir)
