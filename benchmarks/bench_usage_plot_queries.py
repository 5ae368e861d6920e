"""Prometheus queries and latency of one `/plot/<jobid>/<metric>` of a kept (ended) job: every
series read (before the fix) against the metric's own series (after), cache cold and warm,
side by side in one run.

The job is `clusterwatch.loopback.job_series`' synthetic one (8 CPUs, one node, a day,
scraped every 30 s, ended two hours ago), backfilled into a real Prometheus on 127.0.0.1
(`prometheus_with_history`: promtool blocks, the Debian `prometheus`). Its summary is kept
the way the app keeps it (a first report of the ended job), in SQLite through Django.

Each request does what the view does after its access checks: `report.load_report` of the
kept job (its document from the database, its series from Prometheus) and
`rendered.plot_png` through the render cache. `before`: load_report reads every series, as
the view did (`series_keys` None); `after`: only the metric's (`plot_metrics.series_keys`),
as it does now. Queries are counted at the HTTP call. Cold: the render cache is emptied
before each request (the PNG is drawn); warm: it holds the PNG (it is served). The two
modes must give the same PNG: exit status 1 when they do not, or a request fails.

The job's page (`/usage/jobs/<jobid>/`: `load_report` and `job_view`) is measured the same
way: `before` reads every series to list the plots, `after` (`listing_plots`) reads the
scrape count alone and takes the list kept with the summary; both must list the same plots.

    python benchmarks/bench_usage_plot_queries.py             # a 1-day job, 15 requests each
    python benchmarks/bench_usage_plot_queries.py --quick     # a 2-hour job, 3 requests
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional

from clusterwatch.http_client import HttpResponse, request
from clusterwatch.loopback.job_series import Burst, JobHistory, JobPlan, Usage, history
from clusterwatch.loopback.prometheus_history import prometheus_with_history

GiB = 1024**3
JOBID = "8800042"
METRICS = ("cpu", "cores", "memory", "threads", "read")
MODES = ("before", "after")


def progress(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hours", type=float, default=24.0, help="the job's length (24)")
    parser.add_argument("--requests", type=int, default=15, help="timed requests per cell (15)")
    parser.add_argument("--quick", action="store_true", help="a 2-hour job, 3 requests")
    parser.add_argument("--workdir", type=Path, help="keep the data here (default: temporary)")
    args = parser.parse_args(argv)
    if args.quick:
        args.hours, args.requests = 2.0, 3
    if args.hours <= 0 or args.requests < 1:
        parser.error("--hours must be positive and --requests at least 1")
    return args


def synthetic_job(hours: float, now: float) -> JobHistory:
    usage = Usage(core_busy=(0.9, 0.9, 0.8, 0.8, 0.5, 0.5, 0.2, 0.1), rss_bytes=12 * GiB,
                  cache_bytes=2 * GiB, threads=9, open_files=40, read_bytes_per_s=4e6,
                  write_bytes_per_s=1e6, shmem_bytes=GiB // 2,
                  burst=Burst(period_s=3600, busy_s=2400, quiet_busy=0.2))
    end = float(round(now) - 7200)  # ended two hours ago: final, kept, within retention
    return history(JobPlan(jobid=JOBID, name="md-run", user="bench", uid=1500,
                           account="physics", partition="cpu", node="node042",
                           start=end - hours * 3600, end=end,
                           memory_requested_bytes=32 * GiB, usage=usage))


def prepare_django(workdir: Path, prometheus_url: str) -> None:
    for name in [n for n in os.environ if n.startswith("CLUSTERWATCH_")]:
        del os.environ[name]
    data = workdir / "data"
    shutil.rmtree(data, ignore_errors=True)
    data.mkdir(mode=0o700, parents=True)
    os.environ.update({"CLUSTERWATCH_DATA_DIR": str(data),
                       "DJANGO_SETTINGS_MODULE": "clusterwatch.monitor.site.settings",
                       "CLUSTERWATCH_PROMETHEUS_URL": prometheus_url,
                       "CLUSTERWATCH_SACCT": "/bin/false"})  # a kept job never asks it
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


class OneJob:
    """Accounting that knows the synthetic job: what sacct would print of it."""

    def __init__(self, job: JobHistory) -> None:
        from clusterwatch.monitor.usage.accounting.interface import JobRecord

        plan, totals = job.plan, job.totals
        start, end = (datetime.fromtimestamp(t, timezone.utc) for t in (plan.start, plan.end))
        self.record = JobRecord(
            jobid=plan.jobid, user=plan.user, account=plan.account, partition=plan.partition,
            state="COMPLETED", state_reason="", start=start, end=end,
            elapsed_s=round(plan.end - plan.start), cpus_allocated=plan.cpus,
            memory_requested_bytes=plan.memory_requested_bytes, gpus=0, nodes=1,
            nodelist=plan.node, max_rss_bytes=totals.max_rss_bytes, total_cpu_s=totals.cpu_s,
            user_cpu_s=totals.user_s, system_cpu_s=totals.system_s,
            time_limit_s=round(2 * (plan.end - plan.start)), name=plan.name, exit_code="0:0")

    def job(self, jobid: str) -> Any:
        return self.record

    def jobs_of_user(self, user: str, since: datetime) -> list[Any]:
        return [self.record]

    def jobs_ended_since(self, since: datetime) -> list[Any]:
        return [self.record]


class Counted:
    """The HTTP call the series reader makes, counted."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, method: str, url: str, body: Optional[bytes],
                 headers: Optional[Mapping[str, str]], timeout: float,
                 max_body: int) -> HttpResponse:
        self.calls += 1
        return request(method, url, body, headers, timeout, max_body)


class Cell:
    def __init__(self) -> None:
        self.ms: list[float] = []
        self.queries: set[int] = set()
        self.png = b""

    def at(self, fraction: float) -> float:
        ordered = sorted(self.ms)
        return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def plot_request(mode: str, metric: str, counted: Counted, cache_dir: Path) -> bytes:
    """What render_views.plot does for a kept job once the asker may see it."""
    from functools import partial

    from clusterwatch.monitor.usage.metrics.series import fetch_job_series
    from clusterwatch.monitor.usage.rendering import rendered
    from clusterwatch.monitor.usage.rendering.cache import RenderCache
    from clusterwatch.monitor.usage.rendering.plot_metrics import series_keys
    from clusterwatch.monitor.usage.usage_report import load_report

    report = load_report(JOBID, with_series=True, fetch=partial(fetch_job_series, http=counted),
                         series_keys=series_keys(metric) if mode == "after" else None)
    assert report.kept, "the job's summary was not kept"
    return rendered.plot_png(RenderCache(cache_dir), report.document, report.series, metric,
                             report.series_note)


def page_request(mode: str, counted: Counted) -> tuple[str, ...]:
    """What page_views.job_page does for a kept job once the asker may see it: the plots."""
    from functools import partial

    from clusterwatch.monitor.usage.metrics.series import fetch_job_series
    from clusterwatch.monitor.usage.usage_report import load_report
    from clusterwatch.monitor.usage.web.job_page import job_view

    report = load_report(JOBID, with_series=True, fetch=partial(fetch_job_series, http=counted),
                         listing_plots=mode == "after")
    assert report.kept, "the job's summary was not kept"
    return tuple(image.url for image in job_view(report).plots)


def measure_page(mode: str, requests: int) -> tuple[Cell, tuple[str, ...]]:
    cell = Cell()
    plots: tuple[str, ...] = ()
    for _ in range(requests):
        counted = Counted()
        began = time.perf_counter()
        plots = page_request(mode, counted)
        cell.ms.append((time.perf_counter() - began) * 1000)
        cell.queries.add(counted.calls)
    return cell, plots


def measure(mode: str, metric: str, cold: bool, requests: int, cache_dir: Path) -> Cell:
    cell = Cell()
    shutil.rmtree(cache_dir, ignore_errors=True)
    if not cold:
        plot_request(mode, metric, Counted(), cache_dir)  # drawn once, untimed
    for _ in range(requests):
        if cold:
            shutil.rmtree(cache_dir, ignore_errors=True)
        counted = Counted()
        began = time.perf_counter()
        cell.png = plot_request(mode, metric, counted, cache_dir)
        cell.ms.append((time.perf_counter() - began) * 1000)
        cell.queries.add(counted.calls)
    return cell


Results = dict[tuple[str, str, bool], Cell]
Pages = dict[str, tuple[Cell, tuple[str, ...]]]


def run(args: argparse.Namespace, workdir: Path) -> tuple[Results, Pages]:
    job = synthetic_job(args.hours, time.time())
    progress(f"backfilling {len(job.series)} series, {job.scrapes} scrapes each")
    with prometheus_with_history(job.series, workdir / "prom") as prometheus:
        prepare_django(workdir, prometheus.url)
        from clusterwatch.monitor.usage.usage_report import load_report

        first = load_report(JOBID, source=OneJob(job))  # the first report keeps the job
        assert first.document["measured"], first.series_note
        results = {}
        for metric in METRICS:
            for mode in MODES:
                for cold in (True, False):
                    progress(f"{metric}: {mode}, cache {'cold' if cold else 'warm'}")
                    results[(metric, mode, cold)] = measure(mode, metric, cold,
                                                            args.requests, workdir / "cache")
        pages = {}
        for mode in MODES:
            progress(f"the job's page: {mode}")
            pages[mode] = measure_page(mode, args.requests)
    return results, pages


def report(args: argparse.Namespace, results: Mapping[tuple[str, str, bool], Cell],
           pages: Pages, hours: float) -> int:
    same = all(results[(m, "before", c)].png == results[(m, "after", c)].png
               for m in METRICS for c in (True, False))
    same_plots = pages["before"][1] == pages["after"][1] and bool(pages["after"][1])
    print(f"clusterwatch usage reports: /plot of a kept job ({hours:g} h, 8 CPUs, 30 s "
          f"scrapes) against a real Prometheus on 127.0.0.1; {args.requests} requests per "
          f"cell; {os.cpu_count()} CPUs (shared), load average {os.getloadavg()[0]:.2f}")
    print(f"\n{'metric':<9} {'mode':<7} {'queries':>7}  {'cold p50':>9} {'cold p90':>9}  "
          f"{'warm p50':>9} {'warm p90':>9}   (ms)")
    for metric in METRICS:
        for mode in MODES:
            cold, warm = results[(metric, mode, True)], results[(metric, mode, False)]
            queries = "/".join(str(q) for q in sorted(cold.queries | warm.queries))
            print(f"{metric:<9} {mode:<7} {queries:>7}  {cold.at(0.5):9.1f} {cold.at(0.9):9.1f}"
                  f"  {warm.at(0.5):9.1f} {warm.at(0.9):9.1f}")
    print(f"\nthe same PNG before and after: {'yes' if same else 'NO'}")
    print(f"\n{'page':<9} {'mode':<7} {'queries':>7}  {'p50':>9} {'p90':>9}   (ms; plots)")
    for mode in MODES:
        cell, plots = pages[mode]
        queries = "/".join(str(q) for q in sorted(cell.queries))
        print(f"{'job page':<9} {mode:<7} {queries:>7}  {cell.at(0.5):9.1f} {cell.at(0.9):9.1f}"
              f"   {len(plots)}")
    print(f"the same plots listed before and after: {'yes' if same_plots else 'NO'}")
    return 0 if same and same_plots else 1


def main(argv: Sequence[str]) -> int:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="cw-bench-plot-") as scratch:
        workdir = args.workdir or Path(scratch)
        results, pages = run(args, workdir)
    return report(args, results, pages, args.hours)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
