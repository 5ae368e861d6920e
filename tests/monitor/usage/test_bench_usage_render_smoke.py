"""benchmarks/bench_usage_render.py: its synthetic job reads back the way the app reads a
real one, and a tiny run goes end to end, so the benchmark cannot rot unnoticed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from clusterwatch.monitor.usage.metrics.series import SPECS, choose_step
from tests.benchmark_module import load_benchmark

BENCH = Path(__file__).resolve().parents[3] / "benchmarks" / "bench_usage_render.py"


def _bench() -> Any:
    return load_benchmark("bench_usage_render")


def test_the_synthetic_job_has_every_series_at_every_scrape() -> None:
    job, full = _bench().synthetic(0.5, 4, 1, 30.0)
    assert {spec.key for spec in SPECS} <= set(full.series)
    assert len(full.series["core_seconds"]) == 4 and len(full.series["gpu_utilization"]) == 1
    assert all(len(s.points) == 1441 for found in full.series.values() for s in found)
    assert job.elapsed_s == 43_200 and job.cpus_allocated == 4
    totals = [s.points[-1][1] for s in full.series["core_seconds"]]
    assert full.series["cpu_seconds"][0].points[-1][1] == pytest.approx(sum(totals))


def test_the_capped_reading_is_what_the_range_queries_return() -> None:
    bench = _bench()
    _job, full = bench.synthetic(1, 1, 0, 30.0)
    capped = bench.as_the_app_reads(full, 30.0)
    step = choose_step(full.end - full.start, 30.0)
    assert capped.step == step == 87.0  # a day at 1,000 points
    rss = capped.series["memory_rss_bytes"][0].points
    assert len(rss) <= 1000 and rss[-1][0] == full.end
    assert all(b - a == step for (a, _), (b, _) in zip(rss, rss[1:]))
    # A peak series keeps the highest scrape of each step; a counter its latest value.
    scrapes = full.series["memory_rss_bytes"][0].points
    at, value = rss[-1]
    assert value == max(v for t, v in scrapes if at - step - 30 < t <= at)
    total = full.series["cpu_seconds"][0].points[-1][1]
    assert capped.series["cpu_seconds"][0].points[-1][1] == total


def test_it_runs_a_tiny_job_end_to_end() -> None:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("CLUSTERWATCH_")}
    done = subprocess.run([sys.executable, str(BENCH), "--days", "0.02", "--cpus", "2",
                           "--gpus", "1", "--repeats", "1", "--metrics", "cpu,gpu_memory"],
                          capture_output=True, text=True, timeout=300, env=environ, check=False)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert not any(line.startswith("plot memory") for line in lines)
    for row in ("plot cpu ", "plot gpu_memory ", "pie ", "PDF "):
        assert any(line.startswith(row) for line in lines), row
    assert "target: a plot < 300 ms" in done.stdout and "target: PDF < 2000 ms" in done.stdout
    assert "TeX:" in done.stdout and "load average" in done.stdout
    pdf_row = next(line for line in lines if line.startswith("PDF "))
    assert pdf_row.count("-") == 0  # ours capped, full and the original's figures all timed


def test_it_refuses_a_metric_it_does_not_know() -> None:
    with pytest.raises(SystemExit) as refused:
        _bench().parse_args(["--metrics", "cpu,../memory"])
    assert refused.value.code == 2
