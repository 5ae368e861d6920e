"""Time a job's usage plots, pie and PDF for a 7-day, 16-CPU job sampled every 30 s, against
the original's way of drawing them.

The job is synthetic and deterministic: 16 CPUs on one node whose load moves between phases,
memory that grows and falls back, bursts of I/O, 2 GPUs (so every plot has data), every
series the usage reports read (usage/metrics/series.py SPECS), one point per 30 s scrape: 20,161
points per series. Two readings of it are drawn:

- `capped`: the series as the app reads them, one range query per series at the step
  `series.choose_step` picks (at most 1,000 points: a week is read every 606 s), gauges whose
  peak matters as `max_over_time` over each step, exactly what Prometheus would answer;
- `full`: every scrape, 20,161 points per series.

For each: every plot (`plots.render_plot`, PNG bytes), the pie (`render_pie`) and the PDF
(`pdf.render_pdf`: the summary, the warnings, the pie and every plot), `--repeats` times
after one untimed warm-up, median and p90 of this process's CPU time and of wall time.

`pyplot`: the original's approach (petricore's web app) on the full series: per request
`pyplot.figure()`, one `pyplot.plot` per series with the raw timestamps, labels, legend, the
CPU plot's dashed line, `savefig` to a PNG file and `close`; no downsampling. Its metrics
were `jobs_cpu_percent`, `jobs_cpu_time_core` (16 cumulative lines), `jobs_rss`,
`jobs_read_mb`, `jobs_write_mb`, `jobs_user_time` and the user/system pie; each is timed
beside ours for the same quantity. Its PDF ran pylatex and TeX over four such plots and two
pies: TeX is not installed here (`pdflatex` is looked for and reported), so only that PDF's
matplotlib part is timed (four plots and two pies), a lower bound of its cost.

    python benchmarks/bench_usage_render.py                  # 7 days, 5 repeats
    python benchmarks/bench_usage_render.py --quick          # a 6-hour job, 1 repeat
    python benchmarks/bench_usage_render.py --check          # exit 1 when a target is missed

Targets (the issue): the PDF under 2 s and a plot under 300 ms, for the series as the app
reads them; judged on the median CPU time (the machine is shared; wall time is shown).
"""

from __future__ import annotations

import argparse
import bisect
import math
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

import matplotlib
import reportlab

from clusterwatch.monitor.usage.accounting.interface import JobRecord
from clusterwatch.monitor.usage.analysis.figures import analyse
from clusterwatch.monitor.usage.analysis.rules import check
from clusterwatch.monitor.usage.analysis.summary_json import UsageDocument, usage_document
from clusterwatch.monitor.usage.metrics.prometheus_api import Point, Series
from clusterwatch.monitor.usage.metrics.series import SPECS, JobSeries, choose_step
from clusterwatch.monitor.usage.rendering.pdf import render_pdf
from clusterwatch.monitor.usage.rendering.plot_metrics import METRICS
from clusterwatch.monitor.usage.rendering.plots import render_pie, render_plot

GiB = 1024**3
START = datetime(2026, 11, 1, 8, 0, tzinfo=timezone.utc)
TARGET_PLOT_MS = 300.0
TARGET_PDF_MS = 2000.0
# Our metric -> the original's plot of the same quantity.
ORIGINAL = {"cpu": "jobs_cpu_percent", "cores": "jobs_cpu_time_core", "memory": "jobs_rss",
            "read": "jobs_read_mb", "write": "jobs_write_mb", "cpu_time": "jobs_user_time"}


Line = tuple[str, list[float], list[float]]  # label, x, y


@dataclass
class Timing:
    cpu_ms: list[float]
    wall_ms: list[float]

    def row(self) -> str:
        return (f"{statistics.median(self.cpu_ms):8.0f} {_p90(self.cpu_ms):6.0f} "
                f"{statistics.median(self.wall_ms):8.0f}")


def synthetic(days: float, cpus: int, gpus: int, interval: float) -> tuple[JobRecord, JobSeries]:
    """The job and every scrape of it (one point per `interval`)."""
    rng = random.Random(11)
    count = int(days * 86400 // interval) + 1
    t0 = START.timestamp()
    times = [t0 + i * interval for i in range(count)]
    core_totals = [0.0] * cpus
    cores: list[list[Point]] = [[] for _ in range(cpus)]
    found: dict[str, list[list[Point]]] = {spec.key: [[]] for spec in SPECS}
    found["gpu_utilization"] = [[] for _ in range(gpus)]
    found["gpu_memory_used_bytes"] = [[] for _ in range(gpus)]
    read = write = 0.0
    for i, at in enumerate(times):
        phase = 0.35 + 0.6 * (0.5 + 0.5 * math.sin(i / 700))  # hours-long phases
        for core in range(cpus):
            busy = min(1.0, max(0.0, phase * (1 - core / (3 * cpus)) + rng.gauss(0, 0.05)))
            core_totals[core] += busy * interval
            cores[core].append((at, core_totals[core]))
        used = sum(core_totals)
        rss = (4 + 30 * ((i % 2000) / 2000)) * GiB
        read += rng.expovariate(1 / (40 * 1024**2)) * (5 if i % 300 < 20 else 1)
        write += rng.expovariate(1 / (8 * 1024**2))
        values = {"cpu_seconds": used, "cpu_user_seconds": 0.95 * used,
                  "cpu_system_seconds": 0.05 * used, "memory_rss_bytes": rss,
                  "memory_shmem_bytes": 1 * GiB, "memory_cache_bytes": (6 + 8 * phase) * GiB,
                  "memory_usage_bytes": rss + (7 + 8 * phase) * GiB,
                  "memory_limit_bytes": 64 * GiB, "memory_oom_kills": 0.0,
                  "threads": 18 + rng.randrange(8), "process_threads_max": 17.0,
                  "open_files": 40 + rng.randrange(60), "read_bytes": read,
                  "write_bytes": write, "uses_scratch": 1.0}
        for key, value in values.items():
            found[key][0].append((at, float(value)))
        for gpu in range(gpus):
            found["gpu_utilization"][gpu].append((at, min(1.0, phase + rng.gauss(0, 0.1))))
            found["gpu_memory_used_bytes"][gpu].append((at, (20 + 10 * phase) * GiB))
    node = {"instance": "node042"}
    series: dict[str, tuple[Series, ...]] = {
        key: tuple(Series(node, tuple(points)) for points in lists)
        for key, lists in found.items() if key != "core_seconds"}
    series["core_seconds"] = tuple(Series({**node, "core": str(c)}, tuple(points))
                                   for c, points in enumerate(cores))
    for key in ("gpu_utilization", "gpu_memory_used_bytes"):
        series[key] = tuple(Series({**node, "gpu_uuid": f"GPU-{g:08x}-5e1f"}, s.points)
                            for g, s in enumerate(series[key]))
    duration = times[-1] - t0
    job = JobRecord(
        jobid="7000042", user="bench", account="physics", partition="cpu",
        state="COMPLETED", state_reason="", start=START, end=START + timedelta(seconds=duration),
        elapsed_s=int(duration), cpus_allocated=cpus, memory_requested_bytes=64 * GiB,
        gpus=gpus, nodes=1, nodelist="node042", max_rss_bytes=40 * GiB,
        total_cpu_s=sum(core_totals), user_cpu_s=0.95 * sum(core_totals),
        system_cpu_s=0.05 * sum(core_totals), time_limit_s=int(duration * 1.2),
        name="md-equilibration", exit_code="0:0")
    return job, JobSeries(t0, times[-1], interval, count, series)


def as_the_app_reads(full: JobSeries, interval: float) -> JobSeries:
    """What the range queries return: the step choose_step gives, the grid ending at the
    job's end, a plain series' latest sample at each point, a peak's highest sample within
    the step and one scrape interval before it."""
    step = choose_step(full.end - full.start, interval)
    grid_start = full.end - step * math.floor((full.end - full.start) / step)
    grid = [grid_start + i * step for i in range(int((full.end - grid_start) // step) + 1)]
    window = math.ceil(step + interval)
    peaks = {spec.key for spec in SPECS if spec.read == "peak"}
    read: dict[str, tuple[Series, ...]] = {}
    for key, found in full.series.items():
        read[key] = tuple(Series(s.labels, _resample(s.points, grid, window if key in peaks
                                                     else None)) for s in found)
    return JobSeries(grid_start, full.end, step, full.samples, read)


def _resample(points: Sequence[Point], grid: Sequence[float],
              window: float | None) -> tuple[Point, ...]:
    times = [at for at, _ in points]
    out = []
    for t in grid:
        last = bisect.bisect_right(times, t) - 1
        if last < 0:
            continue
        if window is None:
            out.append((t, points[last][1]))
        else:
            first = bisect.bisect_right(times, t - window)
            out.append((t, max(v for _, v in points[first:last + 1])))
    return tuple(out)


def timed(work: Callable[[], object], repeats: int) -> Timing:
    work()  # warm-up: fonts, caches
    timing = Timing([], [])
    for _ in range(repeats):
        cpu, wall = time.process_time(), time.perf_counter()
        work()
        timing.cpu_ms.append((time.process_time() - cpu) * 1000)
        timing.wall_ms.append((time.perf_counter() - wall) * 1000)
    return timing


def document_for(job: JobRecord, series: JobSeries) -> UsageDocument:
    summary = analyse(job, series)
    return usage_document(job, summary, check(job, summary))


class Pyplot:
    """The original's drawing, per request: pyplot's global figure, raw timestamps on the x
    axis, one line per series, savefig to a file, close."""

    def __init__(self, job: JobRecord, full: JobSeries, workdir: Path) -> None:
        matplotlib.use("Agg")
        from matplotlib import pyplot  # here only: the app itself never loads pyplot

        self.plt = pyplot
        self.workdir = workdir
        self.cpus = job.cpus_allocated

        def each(key: str, value: Callable[[float, float, float], float]) -> list[Line]:
            lines = []
            for s in full.get(key) or ():
                pts = s.points
                xs = [t for t, _ in pts[1:]]
                ys = [value(v0, v1, t1 - t0) for (t0, v0), (t1, v1) in zip(pts, pts[1:])]
                lines.append((s.labels.get("core", s.labels["instance"]), xs, ys))
            return lines

        # Gauges in the original's units, computed before timing (it read them from
        # Prometheus ready-made).
        self.data = {
            "jobs_cpu_percent": each("cpu_seconds", lambda a, b, dt: 100 * (b - a) / dt),
            "jobs_cpu_time_core": each("core_seconds", lambda a, b, dt: b),
            "jobs_rss": each("memory_rss_bytes", lambda a, b, dt: b / 1e6),
            "jobs_read_mb": each("read_bytes", lambda a, b, dt: b / 1e6),
            "jobs_write_mb": each("write_bytes", lambda a, b, dt: b / 1e6),
            "jobs_user_time": each("cpu_user_seconds", lambda a, b, dt: b * 100),
        }
        self.user = job.user_cpu_s or 0.0
        self.system = job.system_cpu_s or 0.0
        self.core_totals = [s.points[-1][1] for s in full.get("core_seconds") or ()]

    def plot(self, metric: str) -> None:
        plt = self.plt
        plt.figure()
        for label, xs, ys in self.data[metric]:
            plt.plot(xs, ys, label=label)
            plt.xlabel("Time (in seconds since Unix Epoch)")
            plt.ylabel(metric)
            plt.title(f"{metric} of job 7000042")
        plt.legend()
        if metric == "jobs_cpu_percent":
            plt.axhline(y=80 * self.cpus, linestyle="dashed", color="black")
        plt.savefig(self.workdir / f"{metric}.png")
        plt.close()

    def pie(self, labels: Sequence[str], values: Sequence[float], name: str) -> None:
        plt = self.plt
        plt.figure()
        total = sum(values)
        shares = [100 * v / total for v in values]
        plt.pie(shares, labels=list(labels), autopct="%3.2f%%", startangle=45)
        plt.legend(labels=[f"{label} ({share:.2f}%)" for label, share in zip(labels, shares)],
                   loc="lower left", fontsize="x-small")
        plt.savefig(self.workdir / f"{name}.png")
        plt.close()

    def user_system_pie(self) -> None:
        self.pie(["user", "system"], [self.user, self.system], "pie")

    def pdf_figures(self) -> None:
        """Its PDF's matplotlib part: four plots and two pies (TeX not counted)."""
        for metric in ("jobs_cpu_percent", "jobs_rss", "jobs_read_mb", "jobs_write_mb"):
            self.plot(metric)
        self.user_system_pie()
        self.pie([f"core {c}" for c in range(len(self.core_totals))], self.core_totals, "cores")


def run(args: argparse.Namespace) -> int:
    job, full = synthetic(args.days, args.cpus, args.gpus, args.interval)
    capped = as_the_app_reads(full, args.interval)
    points = (len(capped.series["cpu_seconds"][0].points),
              len(full.series["cpu_seconds"][0].points))
    docs = {"capped": document_for(job, capped), "full": document_for(job, full)}
    readings = {"capped": capped, "full": full}
    tex = shutil.which("pdflatex")
    print(f"usage render benchmark: {args.days:g}-day job, {args.cpus} CPUs, {args.gpus} GPUs, "
          f"scraped every {args.interval:g} s; {args.repeats} timed runs after a warm-up")
    print(f"series: capped {points[0]:,} points each (step {capped.step:g} s), full "
          f"{points[1]:,} points each; {len(full.series['core_seconds'])} per-CPU series")
    print(f"matplotlib {matplotlib.__version__}, reportlab {reportlab.Version}, "
          f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average "
          f"{' '.join(f'{v:.2f}' for v in os.getloadavg())}; TeX: "
          f"{tex or 'not installed (the original PDF path is not reproduced)'}")
    results: dict[tuple[str, str], Timing] = {}
    with tempfile.TemporaryDirectory(prefix="cw-bench-render-") as tmp:
        original = Pyplot(job, full, Path(tmp))
        for name in args.metrics:
            for reading in ("capped", "full"):
                results[(name, reading)] = timed(
                    lambda n=name, r=reading: render_plot(docs[r], readings[r], n), args.repeats)
            if name in ORIGINAL:
                results[(name, "pyplot")] = timed(lambda n=name: original.plot(ORIGINAL[n]),
                                                  args.repeats)
            _progress(f"plot {name} done")
        results[("pie", "capped")] = timed(lambda: render_pie(docs["capped"]), args.repeats)
        results[("pie", "pyplot")] = timed(original.user_system_pie, args.repeats)
        for reading in ("capped", "full"):
            results[("PDF", reading)] = timed(
                lambda r=reading: render_pdf(docs[r], readings[r]), args.repeats)
            _progress(f"PDF {reading} done")
        results[("PDF", "pyplot")] = timed(original.pdf_figures, args.repeats)
    return report(results, args)


def report(results: dict[tuple[str, str], Timing], args: argparse.Namespace) -> int:
    print("\nms per render: CPU median, CPU p90, wall median")
    print(f"{'':<22}{'capped (as the app reads)':>26}{'full resolution':>24}"
          f"{'pyplot, full (original)':>26}{'pyplot / capped':>17}")
    for name in (*args.metrics, "pie", "PDF"):
        cells = []
        for reading in ("capped", "full", "pyplot"):
            timing = results.get((name, reading))
            cells.append(timing.row() if timing else f"{'-':>24}")
        ratio = ""
        if (name, "pyplot") in results:
            theirs = statistics.median(results[(name, "pyplot")].cpu_ms)
            ratio = f"x{theirs / statistics.median(results[(name, 'capped')].cpu_ms):.1f}"
        label = f"plot {name}" if name in args.metrics else name
        if name == "PDF":
            label = "PDF (orig.: figures only)"
        print(f"{label:<26}{cells[0]}  {cells[1]}  {cells[2]}  {ratio:>8}")
    slowest = max(args.metrics, key=lambda n: statistics.median(results[(n, "capped")].cpu_ms))
    plot_ms = statistics.median(results[(slowest, "capped")].cpu_ms)
    pdf_ms = statistics.median(results[("PDF", "capped")].cpu_ms)
    plot_ok, pdf_ok = plot_ms < TARGET_PLOT_MS, pdf_ms < TARGET_PDF_MS
    print(f"\ntarget: a plot < {TARGET_PLOT_MS:.0f} ms: {'pass' if plot_ok else 'MISS'} "
          f"(slowest, {slowest}: {plot_ms:.0f} ms CPU)")
    print(f"target: PDF < {TARGET_PDF_MS:.0f} ms: {'pass' if pdf_ok else 'MISS'} "
          f"({pdf_ms:.0f} ms CPU)")
    print(f"load average after: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    return 1 if args.check and not (plot_ok and pdf_ok) else 0


def _p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(0.9 * len(ordered)) - 1)]


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--days", type=float, default=7.0)
    parser.add_argument("--cpus", type=int, default=16)
    parser.add_argument("--gpus", type=int, default=2)
    parser.add_argument("--interval", type=float, default=30.0, help="scrape interval, s")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--metrics", default=",".join(METRICS),
                        help="the plots to time, comma-separated (the PDF always has all)")
    parser.add_argument("--quick", action="store_true", help="a 6-hour job, one timed run")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args(argv)
    if args.quick:
        args.days, args.repeats = 0.25, 1
    if args.days <= 0 or args.cpus < 1 or args.gpus < 0 or args.repeats < 1:
        parser.error("--days, --cpus and --repeats must be positive, --gpus not negative")
    args.metrics = [name.strip() for name in args.metrics.split(",") if name.strip()]
    unknown = [name for name in args.metrics if name not in METRICS]
    if unknown or not args.metrics:
        parser.error(f"--metrics: one or more of {', '.join(METRICS)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    return run(parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
