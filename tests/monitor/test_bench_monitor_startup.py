"""benchmarks/bench_monitor_startup.py cannot rot: one run of each way, both timed."""

from __future__ import annotations

import re

import pytest

from tests.benchmark_module import load_benchmark

pytestmark = pytest.mark.integration


def test_it_times_both_ways_of_a_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert load_benchmark("bench_monitor_startup").main(["--runs", "1"]) == 0
    out = capsys.readouterr().out
    for way in ("console script", "with the drawing modules"):
        assert re.search(rf"{way} +median +\d+\.\d  min +\d+\.\d", out), out
    assert re.search(r"ratio console script / with the drawing modules: \d\.\d\d", out)


def test_a_failing_command_is_exit_1_with_its_error() -> None:
    with pytest.raises(SystemExit, match="exited 1: Unknown command"):
        load_benchmark("bench_monitor_startup").main(["--runs", "1", "--command", "nosuch"])
