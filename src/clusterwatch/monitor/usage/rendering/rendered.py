"""A job's plot, pie and PDF as the web app serves them: drawn, or taken from the render
cache when the job has ended and they were drawn before. `cache` None draws every time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Optional

from clusterwatch.monitor.usage.analysis.summary_json import UsageDocument
from clusterwatch.monitor.usage.metrics.series import JobSeries
from clusterwatch.monitor.usage.rendering.cache import (
    RenderCache,
    RenderKey,
    RenderKind,
    render_key,
)
from clusterwatch.monitor.usage.rendering.pdf import render_pdf
from clusterwatch.monitor.usage.rendering.plot_metrics import resolve_metric, series_keys
from clusterwatch.monitor.usage.rendering.plots import render_pie, render_plot


def plot_png(cache: Optional[RenderCache], document: UsageDocument,
             series: Optional[JobSeries], metric: str,
             series_note: Optional[str] = None) -> bytes:
    """UnknownMetric before anything is drawn; an alias and our name share one file.
    The plot and its key see the metric's series alone: a job's first view reads all of
    them (it is analysed), later ones only these, and both must find the same file."""
    name = resolve_metric(metric)
    if series is not None:
        series = series.only(series_keys(name))
    key = render_key(RenderKind.PLOT, document, series, name, series_note)
    return _through(cache, key, lambda: render_plot(document, series, name, series_note))


def pie_png(cache: Optional[RenderCache], document: UsageDocument) -> bytes:
    key = render_key(RenderKind.PIE, document, None)
    return _through(cache, key, lambda: render_pie(document))


def report_pdf(cache: Optional[RenderCache], document: UsageDocument,
               series: Optional[JobSeries], series_note: Optional[str] = None) -> bytes:
    key = render_key(RenderKind.PDF, document, series, "", series_note)
    return _through(cache, key, lambda: render_pdf(document, series, series_note))


def _through(cache: Optional[RenderCache], key: Optional[RenderKey],
             render: Callable[[], bytes]) -> bytes:
    return render() if cache is None else cache.get_or_render(key, render)
