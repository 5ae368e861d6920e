"""benchmarks/bench_usage_plot_queries.py runs end to end on a short job (a real Prometheus
with backfilled history, Django, the render cache), so the benchmark cannot rot, and its
figures say what the fix is for: fewer queries per plot, the same PNG; one query for the kept
job's page, the same plots."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from clusterwatch.monitor.usage.rendering.plot_metrics import METRICS
from tests.benchmark_module import load_benchmark
from tests.components import need_binary

BENCH = Path(__file__).resolve().parents[3] / "benchmarks" / "bench_usage_plot_queries.py"


def test_it_runs_a_short_job_end_to_end(tmp_path: Path) -> None:
    need_binary("prometheus")
    need_binary("promtool")
    environ = {name: value for name, value in os.environ.items()
               if not name.startswith("CLUSTERWATCH_") and name != "DJANGO_SETTINGS_MODULE"}
    done = subprocess.run([sys.executable, str(BENCH), "--hours", "0.5", "--requests", "1",
                           "--workdir", str(tmp_path / "bench")], capture_output=True,
                          text=True, timeout=300, env=environ, check=False)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert "the same PNG before and after: yes" in done.stdout
    rows = {tuple(line.split()[:2]): line.split()[2] for line in done.stdout.splitlines()
            if line.split()[:1] and line.split()[0] in METRICS}
    for metric in load_benchmark("bench_usage_plot_queries").METRICS:
        assert rows[(metric, "before")] == "19"
        assert rows[(metric, "after")] == str(len(METRICS[metric].keys) + 1)
    pages = {line.split()[2]: line.split()[3:] for line in done.stdout.splitlines()
             if line.startswith("job page ")}
    assert pages["before"][0] == "19" and pages["after"][0] == "1"
    assert pages["before"][-1] == pages["after"][-1] != "0"  # as many plots
    assert "the same plots listed before and after: yes" in done.stdout


def test_it_refuses_a_job_of_no_length() -> None:
    with pytest.raises(SystemExit) as refused:
        load_benchmark("bench_usage_plot_queries").parse_args(["--hours", "0"])
    assert refused.value.code == 2
