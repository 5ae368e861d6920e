"""The rules of usage_watch over a running job's record and figures (pure), hostile figures
included, and their thresholds in the `[running]` table of the thresholds file."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from clusterwatch.errors import ConfigError
from clusterwatch.monitor.usage.analysis.running_rules import (
    breaking,
    check_running,
    cpu_idle,
    gpu_idle,
    memory_near_limit,
)
from clusterwatch.monitor.usage.analysis.thresholds import (
    DEFAULTS,
    RUNNING_DEFAULTS,
    load_running_thresholds,
    load_thresholds,
)
from clusterwatch.monitor.usage.metrics.running_figures import NodeMemory, RunningFigures
from tests.monitor.usage.usage_support import GiB, record

HOUR = 3600
RUNNING = record(state="RUNNING", end=None, elapsed_s=2 * HOUR, cpus_allocated=8, gpus=2,
                 memory_requested_bytes=8 * GiB)
IDLE = RunningFigures(gpu_peak_utilization={"node01/GPU-a": 0.0, "node01/GPU-b": 0.0},
                      cores_busy=0.5, memory={"node01": NodeMemory(7.5 * GiB, 8 * GiB)})
FINE = RunningFigures(gpu_peak_utilization={"node01/GPU-a": 0.9, "node01/GPU-b": 0.7},
                      cores_busy=7.5, memory={"node01": NodeMemory(2 * GiB, 8 * GiB)})
NAN, INF = math.nan, math.inf


def test_an_idle_job_breaks_each_rule_with_its_figures_and_what_to_do() -> None:
    alerts = {a.code: a for a in check_running(RUNNING, IDLE)}
    assert list(alerts) == ["gpu_idle", "cpu_idle", "memory_near_limit"]
    gpu, cpu, memory = alerts["gpu_idle"], alerts["cpu_idle"], alerts["memory_near_limit"]
    assert "--gpus=0" in gpu.advice and "None of the job's 2 GPUs" in gpu.message
    assert (gpu.figures["gpus_idle"], gpu.figures["gpus_allocated"]) == (2, 2)
    assert cpu.figures["cpu_efficiency"] == pytest.approx(0.5 / 8)
    assert "0.5 of its 8 CPUs" in cpu.message and "--cpus-per-task=1" in cpu.advice
    assert memory.advice.startswith("Your job will be killed when it reaches 8 GiB.")
    assert memory.figures["ratio"] == pytest.approx(7.5 / 8)
    assert memory.figures["memory_limit_bytes"] == 8 * GiB


def test_a_job_that_uses_what_it_holds_breaks_none() -> None:
    assert check_running(RUNNING, FINE) == ()


def test_one_idle_gpu_of_two_says_how_many_to_ask_for() -> None:
    half = RunningFigures(gpu_peak_utilization={"n/a": 0.0, "n/b": 0.6})
    alert = gpu_idle(RUNNING, half, RUNNING_DEFAULTS)
    assert alert is not None and "--gpus=1" in alert.advice
    assert alert.figures["gpus_idle"] == 1


@pytest.mark.parametrize("elapsed", [0, 60, HOUR - 1])
def test_a_job_under_the_window_is_not_judged_idle(elapsed: int) -> None:
    young = record(state="RUNNING", end=None, elapsed_s=elapsed, cpus_allocated=8, gpus=2)
    assert gpu_idle(young, IDLE, RUNNING_DEFAULTS) is None
    assert cpu_idle(young, IDLE, RUNNING_DEFAULTS) is None
    # An out-of-memory kill comes however young the job is.
    assert memory_near_limit(young, IDLE, RUNNING_DEFAULTS) is not None


@pytest.mark.parametrize("value", [NAN, INF, -1.0])
def test_a_figure_that_cannot_be_true_breaks_no_rule(value: float) -> None:
    hostile = RunningFigures(gpu_peak_utilization={"n/a": value, "n/b": value},
                             cores_busy=value, memory={"n": NodeMemory(value, 8 * GiB),
                                                       "m": NodeMemory(GiB, value)})
    assert check_running(RUNNING, hostile) == ()


def test_missing_series_break_no_rule() -> None:
    assert check_running(RUNNING, RunningFigures()) == ()
    used_only = RunningFigures(memory={"node01": NodeMemory(8 * GiB, None)})
    assert memory_near_limit(RUNNING, used_only, RUNNING_DEFAULTS) is None


@pytest.mark.parametrize("limit", [0.0, float(2**63 - 4096)])  # none, and cgroup v1's "none"
def test_a_job_with_no_limit_is_not_near_it(limit: float) -> None:
    unlimited = RunningFigures(memory={"node01": NodeMemory(7 * GiB, limit)})
    assert memory_near_limit(RUNNING, unlimited, RUNNING_DEFAULTS) is None


def test_the_fullest_node_of_a_multi_node_job_is_named() -> None:
    two = RunningFigures(memory={"node01": NodeMemory(2 * GiB, 8 * GiB),
                                 "node02": NodeMemory(7.9 * GiB, 8 * GiB)})
    alert = memory_near_limit(record(state="RUNNING", nodes=2), two, RUNNING_DEFAULTS)
    assert alert is not None and alert.figures["node"] == "node02"
    assert "on node02" in alert.advice


def test_gpus_and_cpus_are_judged_only_where_the_job_has_them() -> None:
    no_gpus = record(state="RUNNING", end=None, elapsed_s=2 * HOUR, cpus_allocated=2, gpus=0)
    assert gpu_idle(no_gpus, IDLE, RUNNING_DEFAULTS) is None  # series of GPUs it has not
    assert cpu_idle(no_gpus, IDLE, RUNNING_DEFAULTS) is None  # fewer than "several" CPUs


def test_only_running_jobs_are_judged_and_joined_by_their_own_number() -> None:
    task = record(jobid="900_3", jobid_raw="903", state="RUNNING", end=None,
                  elapsed_s=2 * HOUR, cpus_allocated=8, gpus=2)
    pending = record(jobid="904", state="PENDING", end=None, elapsed_s=0, cpus_allocated=8)
    found = breaking([task, pending, RUNNING], {"903": IDLE, "904": IDLE})
    assert [(job.jobid, len(alerts)) for job, alerts in found] == [("900_3", 3)]


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "usage.toml"
    path.write_text(text)
    return path


def test_the_running_table_sits_beside_the_end_of_job_thresholds(tmp_path: Path) -> None:
    path = write(tmp_path, "[thresholds]\ncpu_efficiency_min = 0.6\n"
                           "[running]\nidle_for_s = 1800\nmemory_near_limit = 0.95\n")
    running = load_running_thresholds(path)
    assert (running.idle_for_s, running.memory_near_limit) == (1800, 0.95)
    assert running.cpu_min_cpus == RUNNING_DEFAULTS.cpu_min_cpus
    assert load_thresholds(path).cpu_efficiency_min == 0.6
    assert load_running_thresholds(None) == RUNNING_DEFAULTS
    assert load_thresholds(write(tmp_path, "[running]\nidle_for_s = 60\n")) == DEFAULTS


@pytest.mark.parametrize(("text", "complaint"), [
    ("[running]\nmemory_near_limit = 90\n", "running.memory_near_limit is a fraction"),
    ("[running]\nidle_for_s = 0\n", "running.idle_for_s must be at least 1"),
    ("[running]\nidle_for_s = 1.5\n", "running.idle_for_s must be an integer"),
    ("[running]\nidle_for_s = 10_000_000_000\n", "running.idle_for_s must be at most 2592000"),
    ("[running]\ncpu_min_cpus = -2\n", "running.cpu_min_cpus must not be negative"),
    ("[running]\ngpu_idle = 0\n", "unknown key running.gpu_idle"),
    ("[running]\ncpu_efficiency_min = nan\n", "running.cpu_efficiency_min must not be"),
    ("running = 1\n", "running must be a table"),
])
def test_a_bad_running_value_is_one_configuration_error_everywhere(
        tmp_path: Path, text: str, complaint: str) -> None:
    path = write(tmp_path, text)
    for load in (load_running_thresholds, load_thresholds):  # the pages refuse it too
        with pytest.raises(ConfigError) as failure:
            load(path)
        assert complaint in str(failure.value) and "\n" not in str(failure.value)
