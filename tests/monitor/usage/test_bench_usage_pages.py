"""benchmarks/bench_usage_pages.py: its fake sacct output reads back as the jobs it made, and
`--quick` runs end to end (migrate, the fake sacct, every page) so the benchmark cannot rot."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from clusterwatch.monitor.usage.accounting.sacct_parse import parse_sacct
from tests.benchmark_module import load_benchmark

BENCH = Path(__file__).resolve().parents[3] / "benchmarks" / "bench_usage_pages.py"


def _bench() -> Any:
    return load_benchmark("bench_usage_pages")


def test_it_writes_sacct_output_that_reads_back_as_its_jobs() -> None:
    now = datetime(2026, 11, 29, 12, tzinfo=timezone.utc)
    records = parse_sacct(_bench().sacct_output(200, now, random.Random(3)))
    assert len(records) == 200 and {r.user for r in records} == {"alice"}
    assert len({r.jobid for r in records}) == 200
    ended = [r for r in records if not r.running]
    assert ended and all(r.max_rss_bytes and r.end and r.end <= now for r in ended)
    assert all(0 < (r.total_cpu_s or 0) <= r.elapsed_s * r.cpus_allocated for r in records)
    assert {"COMPLETED", "FAILED"} <= {r.state for r in records}


def test_it_runs_the_quick_benchmark_end_to_end(tmp_path: Path) -> None:
    environ = {name: value for name, value in os.environ.items()
               if not name.startswith("CLUSTERWATCH_") and name != "DJANGO_SETTINGS_MODULE"}
    done = subprocess.run([sys.executable, str(BENCH), "--quick", "--workdir",
                           str(tmp_path / "bench")], capture_output=True, text=True,
                          timeout=300, env=environ, check=False)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    lines = done.stdout.splitlines()
    for page in ("newest first", "least CPU-efficient first", "COMPLETED, by memory peak"):
        row = next(line for line in lines if line.startswith(page))
        assert "of target" in row and "statuses" not in row and "NOT EVERY" not in row
    assert "20 jobs of one user" in done.stdout and "target p90 < 200 ms" in done.stdout
    assert "sacct: run and parse" in done.stdout and "load average" in done.stdout
