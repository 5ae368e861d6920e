"""The original's image and document endpoints: `/pdf/<jobid>`, `/pie/<jobid>/`,
`/plot/<jobid>/<metric>` (PNG; our metric names and the original's).

A browser without a session is sent to the login page (a researcher opens the PDF from the
email); a script sends its token. A refusal is a short text/plain answer with its status
(400 malformed job id or metric name, 403 a bad token, 404 unknown or not yours alike,
503 a source down), never a 500. Ended jobs' drawings come from the render cache.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, cast

from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_safe

from clusterwatch.monitor.usage.config import get_config, usage_enabled
from clusterwatch.monitor.usage.rendering import rendered
from clusterwatch.monitor.usage.rendering.cache import RenderCache
from clusterwatch.monitor.usage.rendering.plot_metrics import UnknownMetric, series_keys
from clusterwatch.monitor.usage.web.answers import Refusal, fetch_report, kept_private
from clusterwatch.monitor.usage.web.list_params import reads_dates

View = Callable[..., HttpResponse]


def drawing(body: View) -> View:
    @functools.wraps(body)
    def view(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        return kept_private(answer(request, *args, **kwargs))

    def answer(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not usage_enabled():
            return _text(404, "the usage reports are off on this monitor")
        if not request.user.is_authenticated and "Authorization" not in request.headers:
            return redirect_to_login(request.get_full_path())
        try:
            return body(request, *args, **kwargs)
        except Refusal as refusal:
            return _text(refusal.status, refusal.message)

    return cast(View, require_safe(view))


@reads_dates()
@drawing
def pdf(request: HttpRequest, jobid: str) -> HttpResponse:
    report = fetch_report(request, jobid, with_series=True)
    body = rendered.report_pdf(_cache(), report.document, report.series, report.series_note)
    answer = HttpResponse(body, content_type="application/pdf")
    answer["Content-Disposition"] = f'inline; filename="job-{report.document["jobid"]}-usage.pdf"'
    return answer


@reads_dates()
@drawing
def pie(request: HttpRequest, jobid: str) -> HttpResponse:
    report = fetch_report(request, jobid, with_series=False)
    return HttpResponse(rendered.pie_png(_cache(), report.document), content_type="image/png")


@reads_dates()
@drawing
def plot(request: HttpRequest, jobid: str, metric: str) -> HttpResponse:
    try:
        keys = series_keys(metric)  # a bad name is refused before any source is asked
    except UnknownMetric as exc:
        raise Refusal(400, str(exc)) from None
    # A kept job's plot reads only its metric's series (its cache key hashes those); a job
    # not kept yet reads all of them, for the analysis its document comes from.
    report = fetch_report(request, jobid, with_series=True, series_keys=keys)
    body = rendered.plot_png(_cache(), report.document, report.series, metric,
                             report.series_note)
    return HttpResponse(body, content_type="image/png")


def _cache() -> RenderCache:
    return RenderCache(get_config().cache_dir)


def _text(status: int, message: str) -> HttpResponse:
    return HttpResponse(message + "\n", status=status, content_type="text/plain; charset=utf-8")
