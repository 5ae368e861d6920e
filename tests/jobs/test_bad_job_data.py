"""One job's bad data is that job's error, never the node's: a bad job among good ones,
through the installed `clusterwatch jobs serve` (200, the good jobs whole) and `collect`
(exit status 0).

Each case damages one job (files the kernel would never write: 400-digit or negative
numbers, a name that is not UTF-8, a cpuset naming CPU 20,000,000, a symbolic link where a
cgroup directory should be, an absent /proc file) and says what becomes of that job: left
out or partial, its failed reading counted in `jobs_exporter_errors_total`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

import pytest

from tests.jobs.exporter_process import (
    SeriesKey,
    collect,
    job_series,
    series,
    served,
    value,
)
from tests.jobs.fake_tree import Tree, v1_slurm_job, v2_job

HUGE = "9" * 400  # no unsigned 64-bit integer; as a float, beyond 1.8e308
GOOD_JOBS = ("42", "43")
# Series every good job has in the fixture (the rest depend on the layout).
GOOD_SERIES = ("jobs_cpu_seconds_total", "jobs_memory_usage_bytes", "jobs_processes",
               "jobs_read_bytes_total", "jobs_info")
CONDOR_NAME = os.fsdecode(b"condor_slot1_\xe9t\xe9@node1")  # Latin-1: not UTF-8


@dataclass(frozen=True)
class Case:
    damage: Callable[[Tree], None]  # makes job 44 (or the HTCondor job) bad
    check: Callable[[Mapping[SeriesKey, float]], None]  # what becomes of it
    error_kind: Optional[str] = "malformed"  # counted at least once
    memory_limit: Optional[int] = None


def v1_bad_job(tree: Tree) -> dict[str, Path]:
    dirs = v1_slurm_job(tree, "44", tasks={"step_0/task_0": [104]})
    tree.process(104, io=(7000, 700, 70, 7))
    return dirs


def v2_bad_job(tree: Tree) -> Path:
    job = v2_job(tree, "system.slice/slurmstepd.scope", "job_44",
                 tasks={"step_0/user/task_0": [104]})
    tree.process(104, environ={"SLURM_JOB_ID": "44"})
    return job


def overwrite(path: Path, text: str) -> None:
    path.write_text(text)


def left_out(*names: str) -> Callable[[Mapping[SeriesKey, float]], None]:
    """Job 44 is reported, without `names`, with its CPU seconds (read from other files)."""

    def check(samples: Mapping[SeriesKey, float]) -> None:
        job = job_series(samples, "44")
        assert "jobs_info" in job, sorted(job)
        for name in names:
            assert name not in job, (name, job.get(name))
        if "jobs_cpu_seconds_total" not in names:
            assert job["jobs_cpu_seconds_total"] > 0

    return check


def not_reported(jobid: str) -> Callable[[Mapping[SeriesKey, float]], None]:
    def check(samples: Mapping[SeriesKey, float]) -> None:
        assert not job_series(samples, jobid)
        assert value(samples, "jobs_exporter_jobs") == len(GOOD_JOBS)

    return check


def condor_job_reported(samples: Mapping[SeriesKey, float]) -> None:
    # The undecodable bytes are written as \xNN: the job stays apart from any other.
    cgroups = {dict(labels).get("cgroup") for name, labels in samples if name == "jobs_info"}
    assert "htcondor/condor_slot1_\\xe9t\\xe9@node1" in cgroups, cgroups
    assert value(samples, "jobs_exporter_jobs") == len(GOOD_JOBS) + 1


def io_series_left_out_process_counted(samples: Mapping[SeriesKey, float]) -> None:
    job = job_series(samples, "44")
    assert job["jobs_processes"] == 1
    assert "jobs_read_bytes_total" not in job
    assert "jobs_write_operations_total" not in job


def _huge_io(tree: Tree) -> None:
    v1_bad_job(tree)
    overwrite(tree.proc / "104/io", f"rchar: 1\nwchar: 1\nsyscr: 1\nsyscw: 1\nread_bytes: "
                                    f"{HUGE}\nwrite_bytes: 1\ncancelled_write_bytes: 0\n")


def _condor_job(tree: Tree) -> None:
    v2_job(tree, "htcondor", CONDOR_NAME, tasks={"": [105]})
    tree.process(105)  # no job ad: the job is labelled with its directory's name


def _missing_io(tree: Tree) -> None:
    v1_bad_job(tree)
    (tree.proc / "104/io").unlink()  # a kernel without task I/O accounting


def _symlinked_job(tree: Tree) -> None:
    # Beside job 42 in each controller, job_66: a link to job 42's directory. And inside
    # job 42, a link to / that a walk following links would search whole.
    for controller in ("freezer", "cpuacct", "memory", "cpuset"):
        (tree.cgroup / controller / "slurm/uid_4242/job_66").symlink_to("job_42")
    (tree.cgroup / "freezer/slurm/uid_4242/job_42/step_0/task_0/root").symlink_to("/")


CASES = {
    "400-digit memory.usage_in_bytes": Case(
        lambda tree: overwrite(v1_bad_job(tree)["memory"] / "memory.usage_in_bytes", HUGE),
        left_out("jobs_memory_usage_bytes")),
    "400-digit read_bytes in /proc/PID/io": Case(_huge_io, io_series_left_out_process_counted),
    "400-digit cpu.stat usage_usec": Case(
        lambda tree: overwrite(v2_bad_job(tree) / "cpu.stat", f"usage_usec {HUGE}\n"),
        left_out("jobs_cpu_seconds_total", "jobs_cpu_user_seconds_total")),
    "non-UTF-8 HTCondor cgroup directory": Case(_condor_job, condor_job_reported, None),
    "negative cpuacct.stat": Case(
        lambda tree: overwrite(v1_bad_job(tree)["cpuacct"] / "cpuacct.stat",
                               "user -700\nsystem 5\n"),
        left_out("jobs_cpu_user_seconds_total", "jobs_cpu_system_seconds_total")),
    "negative cpu.stat": Case(
        lambda tree: overwrite(v2_bad_job(tree) / "cpu.stat",
                               "usage_usec 7000000\nuser_usec -7\nsystem_usec 5\n"),
        left_out("jobs_cpu_seconds_total", "jobs_cpu_user_seconds_total",
                 "jobs_cpu_system_seconds_total")),
    "negative memory.stat": Case(
        lambda tree: overwrite(v1_bad_job(tree)["memory"] / "memory.stat",
                               "total_rss -4096\ntotal_cache 0\ntotal_shmem 0\n"),
        left_out("jobs_memory_rss_bytes", "jobs_memory_cache_bytes")),
    "negative oom_control": Case(
        lambda tree: overwrite(v1_bad_job(tree)["memory"] / "memory.oom_control",
                               "oom_kill_disable 0\nunder_oom 0\noom_kill -3\n"),
        left_out("jobs_memory_oom_kills_total")),
    "cpuset.cpus up to CPU 20,000,000": Case(
        lambda tree: overwrite(v1_bad_job(tree)["cpuset"] / "cpuset.cpus", "0-20000000\n"),
        left_out("jobs_cpus"), memory_limit=1 << 30),
    "missing /proc/PID/io": Case(
        _missing_io, io_series_left_out_process_counted, None),
    "symlinked job directories": Case(_symlinked_job, not_reported("66"), None),
}


@pytest.fixture
def tree(tree: Tree) -> Tree:
    """Two good jobs, Slurm v1 and v2, a process each."""
    v1_slurm_job(tree, "42", tasks={"step_0/task_0": [101]})
    v2_job(tree, "system.slice/slurmstepd.scope", "job_43", tasks={"step_0/user/task_0": [102]})
    tree.process(101, io=(1000, 100, 10, 1))
    tree.process(102, io=(5000, 500, 50, 5), environ={"SLURM_JOB_ID": "43"})
    return tree


def assert_good_jobs_whole(samples: Mapping[SeriesKey, float]) -> None:
    for jobid in GOOD_JOBS:
        job = job_series(samples, jobid)
        missing = [name for name in GOOD_SERIES if name not in job]
        assert not missing, (jobid, missing)
    assert value(samples, "jobs_exporter_errors_total", kind="job_failed") == 0


def assert_counted(samples: Mapping[SeriesKey, float], kind: Optional[str]) -> None:
    if kind is not None:
        counted = value(samples, "jobs_exporter_errors_total", kind=kind)
        assert counted is not None and counted >= 1, kind


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_one_bad_job_is_that_jobs_error_over_http(
        tree: Tree, case: Case, need_binary: Callable[[str], str], tmp_path: Path) -> None:
    case.damage(tree)
    with served(tree, need_binary, tmp_path, memory_limit=case.memory_limit) as exporter:
        for _ in range(2):  # the first collection opens every file, the next re-reads them
            status, _, body = exporter.request()
            assert status == 200, (body[:300], exporter.log())
            samples = series(body.decode("utf-8"))
            assert_good_jobs_whole(samples)
            case.check(samples)
            assert_counted(samples, case.error_kind)
        assert "Traceback" not in exporter.log()


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_one_bad_job_is_that_jobs_error_in_collect(
        tree: Tree, case: Case, need_binary: Callable[[str], str]) -> None:
    case.damage(tree)
    result = collect(tree, need_binary, memory_limit=case.memory_limit)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    samples = series(result.stdout)
    assert_good_jobs_whole(samples)
    case.check(samples)
    assert_counted(samples, case.error_kind)
