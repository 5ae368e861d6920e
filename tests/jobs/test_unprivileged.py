"""The installed exporter without the read-bypass capabilities (as nobody, or as the
unprivileged user running the tests): what it cannot read is counted as
`permission_denied` and skipped, never the rest of the node's jobs, and never exported as
zeros."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

import pytest

from tests.jobs.exporter_process import collect, job_series, series, served, value
from tests.jobs.fake_tree import Tree, v1_slurm_job

CONTROLLERS = ("freezer", "cpuacct", "memory", "cpuset")
# Series summed over a job's processes: wrong, not missing, over some of its processes.
PROCESS_SERIES = ("jobs_processes", "jobs_threads", "jobs_process_threads_max",
                  "jobs_open_files", "jobs_memory_process_rss_bytes",
                  "jobs_spawned_processes_total", "jobs_read_bytes_total")


@pytest.fixture
def tree(tree: Tree) -> Tree:
    """Two Slurm v1 jobs of two users, a process each."""
    v1_slurm_job(tree, "42", uid=4242, tasks={"step_0/task_0": [101]})
    v1_slurm_job(tree, "50", uid=5000, tasks={"step_0/task_0": [102]})
    tree.process(101, io=(1000, 100, 10, 1))
    tree.process(102, io=(5000, 500, 50, 5), uid=5000)
    return tree


def permission_denied(samples: dict[tuple[str, frozenset[tuple[str, str]]], float]) -> float:
    counted = value(samples, "jobs_exporter_errors_total", kind="permission_denied")
    assert counted is not None
    return counted


@pytest.mark.parametrize("controllers", [CONTROLLERS, ("freezer",)],
                         ids=["in every controller", "in freezer only"])
def test_an_unreadable_uid_directory_hides_only_its_own_jobs(
        tree: Tree, controllers: tuple[str, ...], need_binary: Callable[[str], str]) -> None:
    for controller in controllers:
        os.chmod(tree.cgroup / controller / "slurm/uid_5000", 0)
    result = collect(tree, need_binary, unprivileged=True)
    assert result.returncode == 0, result.stderr[-2000:]
    samples = series(result.stdout)
    job = job_series(samples, "42")
    assert job["jobs_processes"] == 1
    assert job["jobs_cpu_seconds_total"] > 0
    assert permission_denied(samples) >= 1
    # A job found in another controller is still reported, its processes listed there.
    found_elsewhere = len(controllers) < len(CONTROLLERS)
    assert value(samples, "jobs_exporter_jobs") == (2 if found_elsewhere else 1)
    assert bool(job_series(samples, "50")) == found_elsewhere


def test_an_unreadable_cgroup_procs_leaves_the_process_series_out(
        tree: Tree, need_binary: Callable[[str], str], tmp_path: Path) -> None:
    os.chmod(tree.cgroup / "freezer/slurm/uid_4242/job_42/step_0/task_0/cgroup.procs", 0)
    with served(tree, need_binary, tmp_path, unprivileged=True) as exporter:
        for _ in range(2):  # the second collection has counters from the first
            samples = exporter.scrape()
            job = job_series(samples, "42")
            assert [name for name in PROCESS_SERIES if name in job] == []
            assert job["jobs_cpu_seconds_total"] > 0  # the cgroup's own files were readable
            assert job["jobs_memory_usage_bytes"] > 0
            other = job_series(samples, "50")
            assert [name for name in PROCESS_SERIES if name not in other] == []
            assert permission_denied(samples) >= 1


def test_an_unreadable_job_step_directory_leaves_the_process_series_out(
        tree: Tree, need_binary: Callable[[str], str]) -> None:
    os.chmod(tree.cgroup / "freezer/slurm/uid_4242/job_42/step_0", 0)
    result = collect(tree, need_binary, unprivileged=True)
    assert result.returncode == 0, result.stderr[-2000:]
    samples = series(result.stdout)
    job = job_series(samples, "42")
    assert [name for name in PROCESS_SERIES if name in job] == []
    assert job["jobs_steps"] == 1
    assert permission_denied(samples) >= 1
