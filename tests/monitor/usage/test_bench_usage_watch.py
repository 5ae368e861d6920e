"""benchmarks/bench_usage_watch.py runs end to end on a few jobs (a stand-in sacct program, the
loopback Prometheus, aiosmtpd, SQLite through Django), so the benchmark cannot rot, and its
figures say what it is for: three queries a run whatever the number of jobs, each finding
emailed once."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.benchmark_module import load_benchmark

BENCH = Path(__file__).resolve().parents[3] / "benchmarks" / "bench_usage_watch.py"


def test_it_runs_a_few_jobs_end_to_end(tmp_path: Path) -> None:
    environ = {name: value for name, value in os.environ.items()
               if not name.startswith("CLUSTERWATCH_") and name != "DJANGO_SETTINGS_MODULE"}
    done = subprocess.run([sys.executable, str(BENCH), "--jobs", "40",
                           "--workdir", str(tmp_path / "bench")], capture_output=True,
                          text=True, timeout=300, env=environ, check=False)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert lines[0] == "jobs 40, findings 16, outbox rows 16"
    assert [line.split()[4] for line in lines[1:3]] == ["3", "3"]  # queries per run
    assert "(16 findings, 16 new); 16 emails sent" in lines[1]
    assert "emails: 16 after the first run, 16 after the second (expected 16)" in lines
    assert lines[-1].endswith(": met")


def test_it_refuses_no_jobs() -> None:
    with pytest.raises(SystemExit) as refused:
        load_benchmark("bench_usage_watch").parse_args(["--jobs", "0"])
    assert refused.value.code == 2
