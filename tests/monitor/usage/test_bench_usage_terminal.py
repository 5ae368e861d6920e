"""benchmarks/bench_usage_terminal.py runs end to end on a short job and a small table (a real
Prometheus with backfilled history, the fake sacct, the console script), so the benchmark
cannot rot: each row is printed with the three ways timed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.components import need_binary

BENCH = Path(__file__).resolve().parents[3] / "benchmarks" / "bench_usage_terminal.py"


def test_it_runs_a_short_job_and_a_small_table_end_to_end(tmp_path: Path) -> None:
    need_binary("prometheus")
    need_binary("promtool")
    environ = {name: value for name, value in os.environ.items()
               if not name.startswith("CLUSTERWATCH_") and name != "DJANGO_SETTINGS_MODULE"}
    done = subprocess.run([sys.executable, str(BENCH), "--hours", "1", "--jobs", "20",
                           "--runs", "1", "--workdir", str(tmp_path / "bench")],
                          capture_output=True, text=True, timeout=300, env=environ,
                          check=False)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    rows = {line.split()[0]: line.split()[1:] for line in done.stdout.splitlines()
            if line.split()[:1] in (["job"], ["table"])}
    assert set(rows) == {"job", "table"}
    assert all(len(cells) == 6 and float(cells[0]) > 0 for cells in rows.values())
