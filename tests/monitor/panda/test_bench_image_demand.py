"""benchmarks/bench_image_demand.py: its counts rule is the API's, and `--quick` runs end to
end (the loopback PostgreSQL, the monitor, every slot with both index sets, each answer
checked) so the benchmark cannot rot."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from clusterwatch.loopback.postgres import PostgresMissing, find_bindir
from tests.benchmark_module import load_benchmark
from tests.components import unavailable

BENCH = Path(__file__).resolve().parents[3] / "benchmarks" / "bench_image_demand.py"


def _bench() -> Any:
    return load_benchmark("bench_image_demand")


def test_it_makes_activated_jobs_and_others_the_expected_counts_tell_apart() -> None:
    rows = _bench().jobs_of(500, random.Random(1))
    assert len(rows) == 600 and sum(row[1] == "activated" for row in rows) == 500
    every = _bench().expected(rows, 10**6, 10**3)
    assert sum(every.values()) == 500 and None in every
    assert sum(_bench().expected(rows, 2000, 1).values()) < 500


@pytest.mark.integration
def test_it_runs_the_quick_benchmark_end_to_end(tmp_path: Path) -> None:
    try:
        find_bindir()
    except PostgresMissing as missing:
        unavailable(missing)
    environ = {name: value for name, value in os.environ.items()
               if not name.startswith("CLUSTERWATCH_") and name != "DJANGO_SETTINGS_MODULE"}
    done = subprocess.run([sys.executable, str(BENCH), "--quick", "--workdir",
                           str(tmp_path / "bench")], capture_output=True, text=True,
                          timeout=300, env=environ, check=False)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert "200 activated jobs and 40 in other active states" in done.stdout
    rows = [line for line in done.stdout.splitlines() if line.startswith(("DDL ", "advised "))]
    assert len(rows) == 8 and not any("WRONG" in row for row in rows)
