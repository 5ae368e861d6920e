"""Slurm on cgroup v1: discovery of every layout and the exact samples of a job."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from clusterwatch.jobs.exporter import JobsCollector
from clusterwatch.jobs.file_reader import ErrorCounts
from clusterwatch.jobs.slurm_v1 import SlurmV1
from tests.jobs.fake_tree import ALICE, HZ, PAGE, Tree, user_name, v1_slurm_job

TASKS = {
    "step_extern/task_0": [100],
    "step_batch/task_0": [101],
    "step_0/task_0": [102],
    "step_0/task_1": [103],
}
ENVIRON = {"SLURM_JOB_ID": "42", "SLURM_JOB_ACCOUNT": "def-prof", "SLURM_JOB_PARTITION": "cpu",
           "SLURM_JOB_GPUS": "0,1"}


def registry_for(tree: Tree, **kwargs: Any) -> CollectorRegistry:
    registry = CollectorRegistry()
    registry.register(JobsCollector(str(tree.cgroup), str(tree.proc), nvml=None, **kwargs))
    return registry


def job_processes(tree: Tree) -> None:
    tree.process(100, threads=1, rss_pages=10, io=(0, 0, 1, 1), fds=["/dev/null"])
    tree.process(101, threads=2, rss_pages=20, io=(4096, 8192, 10, 20), environ=ENVIRON,
                 fds=["/dev/null", "/home/alice/in.dat", "socket:[1234]"])
    tree.process(102, threads=8, rss_pages=300, io=(1_000_000, 0, 100, 0), environ=ENVIRON)
    tree.process(103, threads=8, rss_pages=300, io=(1_000_000, 500, 100, 5), environ=ENVIRON)


def test_it_reports_every_reading_of_a_v1_job_exactly(tree: Tree) -> None:
    v1_slurm_job(tree, "42", tasks=TASKS)
    job_processes(tree)
    registry = registry_for(tree)
    labels = {"jobid": "42", "user": user_name(ALICE)}

    def value(name: str, **extra: str) -> float | None:
        return registry.get_sample_value(name, {**labels, **extra})

    assert value("jobs_cpu_seconds_total") == 12.5
    assert value("jobs_cpu_user_seconds_total") == 1000 / HZ
    assert value("jobs_cpu_system_seconds_total") == 200 / HZ
    assert value("jobs_cpus") == 2
    # usage_percpu is indexed by host CPU: only the job's cpuset (1-2) is reported.
    assert value("jobs_cpu_core_seconds_total", core="1") == 2.0
    assert value("jobs_cpu_core_seconds_total", core="2") == 3.0
    assert value("jobs_cpu_core_seconds_total", core="0") is None
    assert value("jobs_cpu_core_seconds_total", core="3") is None
    assert value("jobs_memory_rss_bytes") == 200_000_000  # total_rss, not the job's own rss
    assert value("jobs_memory_cache_bytes") == 50_000_000
    assert value("jobs_memory_shmem_bytes") == 10_000_000
    assert value("jobs_memory_usage_bytes") == 300_000_000
    assert value("jobs_memory_max_usage_bytes") == 400_000_000
    assert value("jobs_memory_limit_bytes") == 1_073_741_824
    assert value("jobs_memory_failcnt_total") == 3
    assert value("jobs_memory_oom_kills_total") == 1
    assert value("jobs_memory_process_rss_bytes") == (10 + 20 + 300 + 300) * PAGE
    # Every step and task is read, not only the first task directory.
    assert value("jobs_processes") == 4
    assert value("jobs_threads") == 19
    assert value("jobs_process_threads_max") == 8
    assert value("jobs_open_files") == 1 + 3 + 1 + 1
    assert value("jobs_spawned_processes_total") == 4
    assert value("jobs_read_bytes_total") == 2_004_096
    assert value("jobs_write_bytes_total") == 8692
    assert value("jobs_read_operations_total") == 211
    assert value("jobs_write_operations_total") == 26
    assert value("jobs_steps") == 3
    assert value("jobs_uses_scratch") is None  # no scratch path configured
    assert value("jobs_gpus") == 2
    assert value("jobs_gpu_info", gpu="0", gpu_uuid="") == 1
    assert value("jobs_gpu_info", gpu="1", gpu_uuid="") == 1
    assert registry.get_sample_value("jobs_info", {
        **labels, "uid": str(ALICE), "account": "def-prof", "partition": "cpu",
        "scheduler": "slurm", "cgroup": f"slurm/uid_{ALICE}/job_42"}) == 1
    assert registry.get_sample_value("jobs_exporter_jobs") == 1


@pytest.mark.parametrize("cpu_controller", ["cpuacct", "cpu,cpuacct"])
def test_it_reads_cpu_from_either_cpuacct_mount_name(tree: Tree, cpu_controller: str) -> None:
    v1_slurm_job(tree, "7", tasks={"step_0/task_0": [100]}, cpu_controller=cpu_controller)
    tree.process(100)
    registry = registry_for(tree)
    assert registry.get_sample_value(
        "jobs_cpu_seconds_total", {"jobid": "7", "user": user_name(ALICE)}) == 12.5


def test_it_finds_jobs_under_a_slurm_nodename_top(tree: Tree) -> None:
    v1_slurm_job(tree, "5", top="slurm_node1", tasks={"step_batch/task_0": [100]})
    v1_slurm_job(tree, "6", top="slurm", uid=0, tasks={"step_batch/task_0": [101]})
    tree.process(100)
    tree.process(101, uid=0)
    jobs = SlurmV1().discover(str(tree.cgroup), ErrorCounts())
    assert [(job.key, job.jobid, job.uid) for job in jobs] == [
        ("slurm/uid_0/job_6", "6", 0),
        (f"slurm_node1/uid_{ALICE}/job_5", "5", ALICE),
    ]
    job = next(job for job in jobs if job.jobid == "5")
    assert job.procs_dir == str(tree.cgroup / "freezer" / job.key)
    assert job.cpu_dir == str(tree.cgroup / "cpuacct" / job.key)
    registry = registry_for(tree)
    labels = {"jobid": "5", "user": user_name(ALICE)}
    assert registry.get_sample_value("jobs_processes", labels) == 1
    assert registry.get_sample_value("jobs_processes", {"jobid": "6", "user": "root"}) == 1


def test_it_reports_a_job_with_no_process(tree: Tree) -> None:
    v1_slurm_job(tree, "9", tasks={"step_extern/task_0": []})
    registry = registry_for(tree)
    labels = {"jobid": "9", "user": user_name(ALICE)}
    assert registry.get_sample_value("jobs_processes", labels) == 0
    assert registry.get_sample_value("jobs_cpus", labels) == 2
    assert registry.get_sample_value("jobs_memory_limit_bytes", labels) == 1_073_741_824
    assert registry.get_sample_value("jobs_read_bytes_total", labels) == 0


def test_it_leaves_out_an_unlimited_v1_memory_limit(tree: Tree) -> None:
    v1_slurm_job(tree, "8", limit_bytes=9223372036854771712)
    registry = registry_for(tree)
    assert registry.get_sample_value(
        "jobs_memory_limit_bytes", {"jobid": "8", "user": user_name(ALICE)}) is None
    assert registry.get_sample_value(
        "jobs_memory_usage_bytes", {"jobid": "8", "user": user_name(ALICE)}) == 300_000_000


def test_it_ignores_directories_that_are_not_jobs(tree: Tree) -> None:
    v1_slurm_job(tree, "8")
    (tree.cgroup / "memory" / "slurm" / "system").mkdir()
    (tree.cgroup / "memory" / "slurm" / f"uid_{ALICE}" / "job_x").mkdir()
    (tree.cgroup / "memory" / "slurmd.service").mkdir()
    (tree.cgroup / "memory" / "user.slice" / "uid_1" / "job_3").mkdir(parents=True)
    assert [job.jobid for job in SlurmV1().discover(str(tree.cgroup), ErrorCounts())] == ["8"]


def test_it_leaves_slurmstepd_out_of_the_jobs_processes(tree: Tree) -> None:
    """Slurm on v1 puts each step's slurmstepd in freezer's job directory itself (and in
    memory's and cpuset's step directories), where its processes are listed: it is told
    apart by its command name and root, as on v2, and counted nowhere."""
    dirs = v1_slurm_job(tree, "42", tasks={"step_batch/task_0": [101], "step_0/task_0": [102]})
    (dirs["freezer"] / "cgroup.procs").write_text("90\n91\n")
    for pid in (90, 91):
        tree.process(pid, uid=0, comm="slurmstepd", threads=7, rss_pages=1000,
                     io=(1 << 30, 1 << 30, 1000, 1000), fds=["/dev/null"] * 9)
    tree.process(101, threads=2, io=(100, 10, 1, 1), environ=ENVIRON)
    tree.process(102, threads=3, io=(200, 20, 2, 2), environ=ENVIRON)
    registry = registry_for(tree)
    labels = {"jobid": "42", "user": user_name(ALICE)}

    def value(name: str) -> float | None:
        return registry.get_sample_value(name, labels)

    assert value("jobs_processes") == 2
    assert value("jobs_threads") == 5
    assert value("jobs_process_threads_max") == 3
    assert value("jobs_open_files") == 2
    assert value("jobs_memory_process_rss_bytes") == 200 * PAGE
    assert value("jobs_spawned_processes_total") == 2
    assert value("jobs_read_bytes_total") == 300
    assert value("jobs_write_operations_total") == 3
    assert value("jobs_steps") == 2
    assert registry.get_sample_value("jobs_exporter_errors_total",
                                     {"kind": "process_vanished"}) == 0


def test_it_counts_a_users_process_that_is_called_slurmstepd(tree: Tree) -> None:
    dirs = v1_slurm_job(tree, "42", tasks={"step_0/task_0": [101]})
    (dirs["freezer"] / "cgroup.procs").write_text("90\n")
    tree.process(90, uid=0, comm="slurmstepd")
    tree.process(101, comm="slurmstepd", threads=4)  # the user's own, not root
    registry = registry_for(tree)
    labels = {"jobid": "42", "user": user_name(ALICE)}
    assert registry.get_sample_value("jobs_processes", labels) == 1
    assert registry.get_sample_value("jobs_threads", labels) == 4


def test_it_does_not_take_the_identity_from_slurmstepd(tree: Tree) -> None:
    dirs = v1_slurm_job(tree, "42", tasks={"step_0/task_0": [101]})
    (dirs["freezer"] / "cgroup.procs").write_text("90\n")
    tree.process(90, uid=0, comm="slurmstepd",
                 environ={"SLURM_JOB_ID": "42", "SLURM_JOB_ACCOUNT": "root-account"})
    tree.process(101, environ=ENVIRON)
    registry = registry_for(tree)
    assert registry.get_sample_value("jobs_info", {
        "jobid": "42", "user": user_name(ALICE), "uid": str(ALICE), "account": "def-prof",
        "partition": "cpu", "scheduler": "slurm", "cgroup": f"slurm/uid_{ALICE}/job_42"}) == 1
