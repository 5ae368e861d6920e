"""benchmarks/bench_usage_pdf_names.py runs end to end on small names, both ways (the name
shown as the app shows it, and whole as before the cap), so it cannot rot unnoticed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[3] / "benchmarks" / "bench_usage_pdf_names.py"


def test_it_times_both_ways_for_each_size_and_shape() -> None:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("CLUSTERWATCH_")}
    done = subprocess.run(
        [sys.executable, str(BENCH), "--sizes", "64,2000", "--repeats", "1"],
        capture_output=True,
        text=True,
        timeout=300,
        env=environ,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    rows = [line.split() for line in done.stdout.splitlines()[2:-1]]
    assert [(row[0], row[1]) for row in rows] == [
        ("64", "word"),
        ("64", "words"),
        ("2,000", "word"),
        ("2,000", "words"),
    ]
    assert all(len(row) == 6 and all(cell.endswith("ms") for cell in row[2:]) for row in rows)
    assert "target: PDF < 2000 ms whatever the name" in done.stdout


def test_it_refuses_sizes_that_are_not_numbers() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH), "--sizes", "1e5"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2 and "--sizes" in done.stderr
