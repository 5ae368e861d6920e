from __future__ import annotations

import math
import re
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

from clusterwatch.monitor.usage.analysis.summary_json import UsageDocument
from clusterwatch.monitor.usage.metrics.prometheus_api import Series
from clusterwatch.monitor.usage.metrics.series import JobSeries
from clusterwatch.monitor.usage.rendering.plot_metrics import METRICS, UnknownMetric
from clusterwatch.monitor.usage.rendering.plots import (
    pie_figure,
    plot_figure,
    render_pie,
    render_plot,
)
from tests.monitor.usage.render_support import (
    curves,
    document_of,
    figure_texts,
    long_series,
    png_size,
    references,
    span_series,
)
from tests.monitor.usage.usage_support import HOUR, GiB, MiB, good_series, one, record
from tests.support.import_graph import import_graph

ROOT = Path(__file__).resolve().parents[3]

GONE = "the series are gone: Prometheus' retention has dropped them"


def _good() -> tuple[UsageDocument, JobSeries]:
    series = good_series()
    return document_of(record(), series), series


def test_each_curve_has_as_many_points_as_its_series() -> None:
    series = good_series()
    document = document_of(record(), series)
    points = len(series.series["memory_rss_bytes"][0].points)
    memory = plot_figure(document, series, "memory")
    assert [len(line.get_xdata()) for line in curves(memory)] == [points] * 3
    # A counter's curve is its rate: one point per pair of samples.
    (cpu,) = curves(plot_figure(document, series, "cpu"))
    assert len(cpu.get_xdata()) == len(cpu.get_ydata()) == points - 1
    assert np.allclose(cpu.get_ydata(), 1.95)


def test_every_axis_names_its_unit() -> None:
    series = good_series(gpu_utilization=[one(lambda t: 0.5, gpu_uuid="GPU-1")],
                         gpu_memory_used_bytes=[one(lambda t: 3 * GiB, gpu_uuid="GPU-1")],
                         read_bytes=[one(lambda t: 2048 * t)],
                         write_bytes=[one(lambda t: 20 * MiB * t)])
    document = document_of(record(gpus=1), series)
    units = {}
    for name in METRICS:
        axes = plot_figure(document, series, name).axes[0]
        assert axes.get_xlabel() == "time since the job started (minutes)"
        unit = re.fullmatch(r".+ \((.+)\)", axes.get_ylabel())
        assert unit, (name, axes.get_ylabel())
        units[name] = unit.group(1)
    assert units == {"cpu": "CPUs", "cores": "%", "cpu_time": "CPU-minutes", "memory": "GiB",
                     "threads": "threads", "open_files": "files", "read": "KiB/s",
                     "write": "MiB/s", "gpu_utilization": "%", "gpu_memory": "GiB"}


def test_the_allocation_is_a_labelled_dashed_line_in_the_axis_unit() -> None:
    series = good_series()
    document = document_of(record(memory_requested_bytes=8 * GiB), series)
    (requested,) = references(plot_figure(document, series, "memory"))
    assert requested.get_label() == "requested: 8.0 GiB"
    assert list(requested.get_ydata()) == [8.0, 8.0]
    (cpus,) = references(plot_figure(document, series, "cpu"))
    assert cpus.get_label() == "allocated: 2 CPUs"
    (growing,) = references(plot_figure(document, series, "cpu_time"))
    assert list(growing.get_ydata()) == [0, 120.0]  # 2 CPUs x 60 minutes, in CPU-minutes


def test_it_renders_a_png_of_the_plot_size() -> None:
    document, series = _good()
    data = render_plot(document, series, "jobs_cpu_percent")
    assert png_size(data) == (800, 360)
    assert 5_000 < len(data) < 300_000
    assert render_plot(document, series, "cpu") == data


def test_an_unknown_metric_is_refused_before_anything_is_drawn() -> None:
    document, series = _good()
    with pytest.raises(UnknownMetric):
        render_plot(document, series, "../memory")


def test_without_series_it_says_why_in_words_instead_of_an_empty_plot() -> None:
    job = record()
    document = document_of(job, None)
    figure = plot_figure(document, None, "memory", GONE)
    assert figure.axes == []
    assert "Memory of job 4242" in figure_texts(figure)
    assert "Not plotted: the series are gone" in figure_texts(figure).replace("\n", " ")
    assert png_size(render_plot(document, None, "memory", GONE)) == (800, 360)
    assert "not available" in figure_texts(plot_figure(document, None, "cpu"))


def test_too_few_scrapes_is_said_not_drawn() -> None:
    series = good_series()
    document = document_of(record(), span_series(HOUR, 3, **series.series))
    assert document["measured"] is False
    text = figure_texts(plot_figure(document, series, "cpu")).replace("\n", " ")
    assert "saw this job 3 times" in text


def test_a_metric_that_was_not_measured_says_so() -> None:
    document, series = _good()
    figure = plot_figure(document, series, "gpu_utilization")
    assert figure.axes == []
    assert "Not measured: no GPU of this job was measured" in figure_texts(figure)


def test_nan_values_and_missing_samples_break_the_line_instead_of_bridging_it() -> None:
    def with_holes(t: float) -> float:
        return math.nan if 600 <= t < 900 else 2 * GiB
    rss = one(with_holes)
    # Prometheus had no sample for 20 minutes: the points jump in time.
    t0 = rss.points[0][0]
    rss = Series(rss.labels, tuple(p for p in rss.points if not 1800 <= p[0] - t0 < 3000))
    series = good_series(memory_rss_bytes=[rss], memory_shmem_bytes=[])
    document = document_of(record(), series)
    own = curves(plot_figure(document, series, "memory"))[0]
    y = np.asarray(own.get_ydata(), dtype=float)
    finite = [p for p in rss.points if math.isfinite(p[1])]
    assert np.count_nonzero(np.isfinite(y)) == len(finite)
    assert np.count_nonzero(np.isnan(y)) == 10 + 1  # ten NaN samples, one break for the jump


def test_a_series_of_one_point_is_a_marked_point_and_a_counter_of_one_is_not_a_rate() -> None:
    single = long_series(lambda t: 3 * GiB, 0)
    series = good_series(memory_rss_bytes=[single], memory_shmem_bytes=[],
                         memory_cache_bytes=[], memory_usage_bytes=[],
                         cpu_seconds=[long_series(lambda t: 5.0, 0)])
    document = document_of(record(), series)
    (own,) = curves(plot_figure(document, series, "memory"))
    assert len(own.get_xdata()) == 1 and own.get_marker() == "o"
    text = figure_texts(plot_figure(document, series, "cpu"))
    assert "a rate needs two points" in text


def test_a_seven_day_job_reads_in_hours() -> None:
    week = 7 * 24 * HOUR
    step = 606.0  # what choose_step gives a week at 1,000 points
    found = {"cpu_seconds": [long_series(lambda t: 15.0 * t, week, step)],
             "memory_rss_bytes": [long_series(lambda t: 40 * GiB, week, step)]}
    job = record(cpus_allocated=16, elapsed_s=week, time_limit_s=None,
                 end=record().start + timedelta(seconds=week))
    series = span_series(week, 20_160, step, **found)
    document = document_of(job, series)
    figure = plot_figure(document, series, "cpu")
    axes = figure.axes[0]
    assert axes.get_xlabel().endswith("(hours)")
    assert axes.get_xlim() == pytest.approx((0, 168))
    (cpu,) = curves(figure)
    assert len(cpu.get_xdata()) == len(found["cpu_seconds"][0].points) - 1
    assert np.allclose(cpu.get_ydata(), 15.0)


def test_a_three_second_job_reads_in_seconds() -> None:
    series = span_series(3, 12, 1.0, memory_rss_bytes=[long_series(lambda t: 1 * MiB, 3, 1.0)])
    job = record(elapsed_s=3, end=record().start + timedelta(seconds=3),
                 memory_requested_bytes=2 * MiB)  # the reference is in the unit's range too
    document = document_of(job, series, measured=True)
    axes = plot_figure(document, series, "memory").axes[0]
    assert axes.get_xlabel().endswith("(seconds)")
    assert axes.get_xlim() == pytest.approx((0, 3))
    assert axes.get_ylabel() == "memory (MiB)"


@pytest.mark.parametrize(("metric", "key", "value"), [
    ("memory", "memory_rss_bytes", 1e30),
    ("threads", "threads", 1e300),
    ("open_files", "open_files", 1.7e308),
])
def test_impossible_values_are_not_drawn_and_the_plot_says_why(metric: str, key: str,
                                                               value: float) -> None:
    """A value past any node (usage/analysis/readings.py) is left out, as the figures leave it out:
    the metric's other curves are drawn, and with none left the image says why."""
    series = good_series(**{key: [one(lambda t: value)]})
    document = document_of(record(), series)
    assert png_size(render_plot(document, series, metric))[0] == 800
    figure = plot_figure(document, series, metric)
    drawn = [y for line in (curves(figure) if figure.axes else ())
             for y in np.asarray(line.get_ydata(), dtype=float)]
    assert all(y < 1e9 for y in drawn)  # in the axis unit: GiB of memory, threads, files
    if not drawn:
        said = figure_texts(figure)
        assert "Not measured: the exporter's readings cannot be true" in said


def test_huge_byte_counts_are_in_exbibytes() -> None:
    series = good_series(memory_rss_bytes=[one(lambda t: 2**60)])  # the most that can be true
    axes = plot_figure(document_of(record(), series), series, "memory").axes[0]
    assert axes.get_ylabel() == "memory (EiB)"


def test_zero_allocation_draws_no_reference_line() -> None:
    series = good_series()
    document = document_of(record(cpus_allocated=0, memory_requested_bytes=None), series)
    for metric in ("cpu", "memory", "threads", "cpu_time"):
        figure = plot_figure(document, series, metric)
        assert references(figure) == [] and curves(figure)
        assert png_size(render_plot(document, series, metric))[0] == 800


def test_text_from_the_data_is_shown_as_typed_never_as_math() -> None:
    hostile = r"GPU-$\frac{1}{0"  # an unbalanced '$' would fail matplotlib's math parser
    series = good_series(gpu_utilization=[one(lambda t: 0.5, gpu_uuid=hostile)])
    document = document_of(record(gpus=1), series)
    assert png_size(render_plot(document, series, "gpu_utilization"))[0] == 800
    (line,) = curves(plot_figure(document, series, "gpu_utilization"))
    assert line.get_label() == r"node01 GPU GPU-\$\frac{1}{0"


def test_many_curves_are_counted_beside_the_plot_instead_of_a_legend() -> None:
    cores = [one(lambda t, c=c: 0.5 * t, core=str(c)) for c in range(16)]
    series = good_series(core_seconds=cores)
    figure = plot_figure(document_of(record(cpus_allocated=16), series), series, "cores")
    assert len(curves(figure)) == 16 and figure.axes[0].get_legend() is None
    assert "16 curves" in "\n".join(t.get_text() for t in figure.axes[0].texts)


def test_the_pie_has_two_parts_with_seconds_and_percentages() -> None:
    document = document_of(record(), None)
    figure = pie_figure(document)
    (axes,) = figure.axes
    assert len(axes.patches) == 2
    labels = [text.get_text() for text in axes.texts]
    assert labels == ["user: 6,900 s (98.6 %)", "system: 100 s (1.4 %)"]
    assert png_size(render_pie(document)) == (600, 400)


def test_a_pie_with_no_system_time_still_has_its_two_parts() -> None:
    figure = pie_figure(document_of(record(system_cpu_s=0.0), None))
    assert len(figure.axes[0].patches) == 2
    assert "system: 0.00 s (0.0 %)" in [t.get_text() for t in figure.axes[0].texts]


@pytest.mark.parametrize(("user", "system", "says"), [
    (None, 100.0, "Not measured"), (6900.0, None, "Not measured"),
    (0.0, 0.0, "No CPU time"), (-5.0, 10.0, "not usable"), (math.nan, 1.0, "not usable"),
])
def test_a_pie_without_usable_times_says_why(user: object, system: object, says: str) -> None:
    document = document_of(record(), None, cpu_user_s=user, cpu_system_s=system)
    figure = pie_figure(document)
    assert figure.axes == [] and says in figure_texts(figure)
    assert png_size(render_pie(document)) == (600, 400)


def test_no_module_of_the_app_imports_pyplot() -> None:
    importers = sorted(module for module, imports in import_graph().items()
                       for name, _top in imports
                       if name.startswith(("matplotlib.pyplot", "pylab", "matplotlib.pylab")))
    assert importers == []


def test_drawing_a_plot_a_pie_and_a_pdf_never_loads_pyplot() -> None:
    script = (
        "import sys\n"
        "from clusterwatch.monitor.usage.rendering import rendered\n"
        "from tests.monitor.usage.render_support import document_of\n"
        "from tests.monitor.usage.usage_support import good_series, record\n"
        "series = good_series()\n"
        "document = document_of(record(), series)\n"
        "rendered.plot_png(None, document, series, 'memory')\n"
        "rendered.pie_png(None, document)\n"
        "rendered.report_pdf(None, document, series)\n"
        "print(sorted({'matplotlib.pyplot', 'matplotlib.pylab', 'pylab'} & set(sys.modules)))\n"
        )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, check=False, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"
