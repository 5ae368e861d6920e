"""A job's usage plots and its user/system CPU pie, as PNG.

matplotlib through its object API on the Agg canvas: a Figure per request, no pyplot (whose
global figure registry leaks between requests and threads, and picks a GUI backend). Every
axis names its unit; the time axis counts from the job's start; the allocation is a labelled
dashed line. When there is nothing honest to draw (the series are gone, the job had too few
scrapes, the metric was not measured), the image says why in words instead of showing an
empty plot or zeros. `plot_figure` and `pie_figure` build the Figure (tests inspect it);
`render_plot` and `render_pie` give the PNG bytes.
"""

from __future__ import annotations

import io
import math
import textwrap
from datetime import datetime
from typing import Optional

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from clusterwatch.monitor.usage.analysis import readings
from clusterwatch.monitor.usage.analysis.summary_json import UsageDocument
from clusterwatch.monitor.usage.metrics.series import JobSeries
from clusterwatch.monitor.usage.rendering import plot_units
from clusterwatch.monitor.usage.rendering.plot_metrics import (
    METRICS,
    Curve,
    PlotMetric,
    Reference,
    metric_curves,
    resolve_metric,
)
from clusterwatch.monitor.usage.rendering.sizes import DPI, PIE_SIZE_IN, PLOT_SIZE_IN

GAP_STEPS = 1.5  # a jump of more than this many steps between points is a gap, not a line
MARKERS_BELOW = 20  # points: fewer than this, and each point is marked (one point is a dot)
LEGEND_MAX = 8  # curves: more, and the legend would cover the plot
# Beyond this, matplotlib's tick arithmetic overflows (1.7e308 fails the image); no job
# has that much of anything, so such a value is a broken counter, left out and said so.
SHOWN_MAX = 1e200

NO_SERIES = "the exporter's series of this job are not available"


def plot_figure(document: UsageDocument, series: Optional[JobSeries], metric: str,
                series_note: Optional[str] = None) -> Figure:
    """The plot of `metric` (ours or the original's name; UnknownMetric otherwise)."""
    chosen = METRICS[resolve_metric(metric)]
    why = unplotted(document, series, series_note)
    if why is not None or series is None:
        return placeholder_figure(_title(chosen, document), f"Not plotted: {why}")
    curves = metric_curves(chosen, series)
    if not curves:
        return placeholder_figure(_title(chosen, document), _not_measured(chosen, series))
    return _draw(document, series, chosen, curves)


def unplotted(document: UsageDocument, series: Optional[JobSeries],
              series_note: Optional[str] = None) -> Optional[str]:
    """Why no metric of this job is plotted (the report's note first), None when they are."""
    if series is None:
        return series_note or NO_SERIES
    if not document["measured"]:
        return series_note or (f"too few scrapes: the exporter saw this job "
                               f"{document['samples']} times, too few for curves")
    return None


def measured_figures(document: UsageDocument, series: JobSeries) -> list[Figure]:
    """The plot of every metric with something to draw, in METRICS order (none for a job
    with too few scrapes): what the PDF shows."""
    if unplotted(document, series) is not None:
        return []
    found = []
    for metric in METRICS.values():
        curves = metric_curves(metric, series)
        if curves:
            found.append(_draw(document, series, metric, curves))
    return found


def pie_figure(document: UsageDocument) -> Figure:
    """System vs user CPU time, one pie of two parts with their seconds and percentages."""
    title = f"CPU time of job {document['jobid']}: user vs system"
    user, system = document["cpu_user_s"], document["cpu_system_s"]
    if user is None or system is None:
        return placeholder_figure(title, "Not measured: the user and system CPU times of "
                                         "this job are not known", PIE_SIZE_IN)
    if not (math.isfinite(user) and math.isfinite(system)) or min(user, system) < 0:
        return placeholder_figure(title, "Not measured: the CPU times recorded for this job "
                                         "are not usable", PIE_SIZE_IN)
    total = user + system
    if total <= 0:
        return placeholder_figure(title, "No CPU time: the job used none", PIE_SIZE_IN)
    figure = _figure(PIE_SIZE_IN)
    axes = figure.add_axes((0.05, 0.05, 0.9, 0.8))
    labels = [f"{part}: {_seconds(value)} ({100 * value / total:.1f} %)"
              for part, value in (("user", user), ("system", system))]
    axes.pie([user, system], labels=labels, colors=["#4c72b0", "#dd8452"], startangle=90,
             counterclock=False, wedgeprops={"linewidth": 1, "edgecolor": "white"},
             textprops={"fontsize": 9})
    axes.set_aspect("equal")
    figure.suptitle(_plain(title), fontsize=11)
    return figure


def placeholder_figure(title: str, message: str,
                       size: tuple[float, float] = PLOT_SIZE_IN) -> Figure:
    """An image that says, in words, why there is no plot: no axes, no zeros."""
    figure = _figure(size)
    figure.text(0.5, 0.62, _plain(title), ha="center", va="center", fontsize=12)
    wrapped = textwrap.fill(message, width=int(size[0] * 9))
    figure.text(0.5, 0.4, _plain(wrapped), ha="center", va="center", fontsize=10,
                color="#444444")
    return figure


def figure_png(figure: Figure, dpi: float = DPI) -> bytes:
    buffer = io.BytesIO()
    FigureCanvasAgg(figure)
    # No "Software" entry: the same figure gives the same bytes, whatever the version.
    figure.savefig(buffer, format="png", dpi=dpi, metadata={"Software": None})
    return buffer.getvalue()


def render_plot(document: UsageDocument, series: Optional[JobSeries], metric: str,
                series_note: Optional[str] = None, dpi: float = DPI) -> bytes:
    return figure_png(plot_figure(document, series, metric, series_note), dpi)


def render_pie(document: UsageDocument, dpi: float = DPI) -> bytes:
    return figure_png(pie_figure(document), dpi)


def _draw(document: UsageDocument, series: JobSeries, metric: PlotMetric,
          curves: tuple[Curve, ...]) -> Figure:
    start = _job_start(document, series)
    span = max(series.end - start, float(document["elapsed_s"]), 0.0)
    when = plot_units.elapsed(span)
    reference = metric.reference(document)
    scale = metric.scale(_largest(curves, reference, span))
    figure = _figure(PLOT_SIZE_IN)
    # The legend sits right of the axes, where it can never hide a curve.
    axes = figure.add_axes((0.08, 0.14, 0.63, 0.76))
    left_out = 0
    for curve in curves:
        x, y = _arrays(curve, start, series.step, when, scale)
        huge = np.abs(y) > SHOWN_MAX
        left_out += int(np.count_nonzero(huge))
        y[huge] = np.nan
        few = np.count_nonzero(np.isfinite(y)) < MARKERS_BELOW
        axes.plot(x, y, label=_plain(curve.label), linewidth=1.2,
                  marker="o" if few else None, markersize=3)
    if reference is not None:
        _draw_reference(axes, reference, span, when, scale)
    if left_out:
        figure.text(0.08, 0.02, f"{left_out} values above {SHOWN_MAX:.0e} {scale.unit} left "
                    "out: a counter that broke, not a measurement", fontsize=7)
    axes.set_xlim(0, max(span * when.factor, 1e-9))
    if _lowest(curves) >= 0:
        axes.set_ylim(bottom=0)  # an amount starts at none, not at the smallest value seen
    axes.set_xlabel(f"time since the job started ({when.unit})", fontsize=9)
    axes.set_ylabel(f"{metric.quantity} ({scale.unit})", fontsize=9)
    # A figure title, not the axes': placing the axes' title measures every tick label.
    figure.text(0.4, 0.95, _plain(_title(metric, document)), ha="center", va="center",
                fontsize=11)
    axes.grid(True, linewidth=0.4, alpha=0.5)
    axes.tick_params(labelsize=8)
    if len(curves) + (reference is not None) <= LEGEND_MAX:
        axes.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False)
    else:
        beside = f"{len(curves)} curves, one each" + (
            f";\ndashed: {reference.label}" if reference is not None else "")
        axes.text(1.02, 1.0, _plain(beside), transform=axes.transAxes, fontsize=7, va="top")
    return figure


def _arrays(curve: Curve, start: float, step: float, when: plot_units.Scale,
            scale: plot_units.Scale) -> tuple[np.ndarray, np.ndarray]:
    """x in the time unit since the start, y in the chosen unit; non-finite values and
    jumps in time (Prometheus had no sample) become breaks in the line, never a bridge."""
    t = np.fromiter((at for at, _ in curve.points), dtype=float, count=len(curve.points))
    y = np.fromiter((value for _, value in curve.points), dtype=float,
                    count=len(curve.points))
    with np.errstate(over="ignore", invalid="ignore"):
        y = y * scale.factor
    y[~np.isfinite(y)] = np.nan
    x = (t - start) * when.factor
    gaps = np.nonzero(np.diff(t) > GAP_STEPS * step)[0] + 1
    if gaps.size:
        x = np.insert(x, gaps, np.nan)
        y = np.insert(y, gaps, np.nan)
    return x, y


def _draw_reference(axes: Axes, reference: Reference, span: float, when: plot_units.Scale,
                    scale: plot_units.Scale) -> None:
    label = _plain(reference.label)
    if reference.growing:
        axes.plot([0, span * when.factor], [0, reference.value * span * scale.factor],
                  linestyle="--", color="black", linewidth=1.0, label=label)
    else:
        axes.axhline(reference.value * scale.factor, linestyle="--", color="black",
                     linewidth=1.0, label=label)


def _largest(curves: tuple[Curve, ...], reference: Optional[Reference], span: float) -> float:
    values = [v for curve in curves for _, v in curve.points if math.isfinite(v)]
    if reference is not None:
        values.append(reference.value * (span if reference.growing else 1.0))
    return max((abs(v) for v in values), default=0.0)


def _lowest(curves: tuple[Curve, ...]) -> float:
    return min((v for curve in curves for _, v in curve.points if math.isfinite(v)),
               default=0.0)


def _title(metric: PlotMetric, document: UsageDocument) -> str:
    return f"{metric.title} of job {document['jobid']}"


def _not_measured(metric: PlotMetric, series: JobSeries) -> str:
    rejected = readings.screened(series).rejected
    why = [rejected[key] for key in metric.keys if key in rejected]
    if why:
        return f"Not measured: the exporter's readings cannot be true ({why[0]})"
    if metric.counter and any(series.get(key) for key in metric.keys):
        return "Not measured: a rate needs two points and the exporter has one"
    return f"Not measured: {metric.missing}"


def _job_start(document: UsageDocument, series: JobSeries) -> float:
    started = document["start"]
    if started is None:
        return series.start
    return datetime.fromisoformat(started.replace("Z", "+00:00")).timestamp()


def _figure(size: tuple[float, float]) -> Figure:
    return Figure(figsize=size, dpi=DPI, facecolor="white")


def _seconds(value: float) -> str:
    return f"{value:.2f} s" if value < 10 else f"{value:,.0f} s"


def _plain(text: str) -> str:
    """Text from the data shown as typed: a '$' would start matplotlib's math mode (and an
    unbalanced one fail the whole image)."""
    return text.replace("$", r"\$")
