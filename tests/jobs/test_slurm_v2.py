"""Slurm on cgroup v2: scopes, SLUID job directories, uid from the processes."""

from __future__ import annotations

from pathlib import Path

from prometheus_client import CollectorRegistry

from clusterwatch.jobs.exporter import JobsCollector
from clusterwatch.jobs.file_reader import ErrorCounts
from clusterwatch.jobs.slurm_v2 import SlurmV2
from tests.jobs.fake_tree import ALICE, Tree, user_name, v2_job

SCOPE = "system.slice/slurmstepd.scope"
TASKS = {"step_batch/slurm": [90], "step_batch/user/task_0": [101],
         "step_0/slurm": [91], "step_0/user/task_0": [102], "step_0/user/task_1": [103]}


def registry_for(tree: Tree) -> CollectorRegistry:
    registry = CollectorRegistry()
    registry.register(JobsCollector(tree.cgroup, tree.proc, nvml=None))
    return registry


def processes(tree: Tree, environ: dict[str, str] | None = None) -> None:
    tree.process(90, uid=0, comm="slurmstepd", threads=5)  # slurmstepd: not the job's
    tree.process(91, uid=0, comm="slurmstepd", threads=5)
    for pid in (101, 102, 103):
        tree.process(pid, threads=2, environ=environ, io=(100, 10, 1, 1))


def test_it_reports_a_v2_job_exactly(tree: Tree) -> None:
    v2_job(tree, SCOPE, "job_77", tasks=TASKS)
    processes(tree, {"SLURM_JOB_ID": "77", "SLURM_JOB_ACCOUNT": "acct",
                     "SLURM_JOB_PARTITION": "gpu", "CUDA_VISIBLE_DEVICES": "0"})
    registry = registry_for(tree)
    labels = {"jobid": "77", "user": user_name(ALICE)}

    def value(name: str, **extra: str) -> float | None:
        return registry.get_sample_value(name, {**labels, **extra})

    assert value("jobs_cpu_seconds_total") == 7.0
    assert value("jobs_cpu_user_seconds_total") == 5.0
    assert value("jobs_cpu_system_seconds_total") == 2.0
    assert value("jobs_cpus") == 4
    assert value("jobs_cpu_core_seconds_total", core="0") is None  # v2 has no per-CPU usage
    assert value("jobs_memory_rss_bytes") == 300_000_000 + 4096  # anon + swapcached
    assert value("jobs_memory_cache_bytes") == 100_000_000
    assert value("jobs_memory_shmem_bytes") == 20_000_000
    assert value("jobs_memory_usage_bytes") == 500_000_000
    assert value("jobs_memory_max_usage_bytes") == 900_000_000
    assert value("jobs_memory_limit_bytes") == 2147483648
    assert value("jobs_memory_failcnt_total") == 5
    assert value("jobs_memory_oom_kills_total") == 2
    assert value("jobs_processes") == 3  # slurmstepd in step_*/slurm left out
    assert value("jobs_threads") == 6
    assert value("jobs_read_bytes_total") == 300
    assert value("jobs_steps") == 2
    # A job-local CUDA_VISIBLE_DEVICES index is not a host GPU: not reported as one.
    assert value("jobs_gpus") == 0
    assert registry.get_sample_value("jobs_info", {
        **labels, "uid": str(ALICE), "account": "acct", "partition": "gpu",
        "scheduler": "slurm", "cgroup": f"{SCOPE}/job_77"}) == 1


def test_it_leaves_out_the_peak_on_kernels_without_memory_peak(tree: Tree) -> None:
    v2_job(tree, SCOPE, "job_78", tasks={"step_0/user/task_0": [101]}, peak=None,
           max_bytes="max")
    tree.process(101)
    registry = registry_for(tree)
    labels = {"jobid": "78", "user": user_name(ALICE)}
    assert registry.get_sample_value("jobs_memory_max_usage_bytes", labels) is None
    assert registry.get_sample_value("jobs_memory_limit_bytes", labels) is None
    assert registry.get_sample_value("jobs_memory_usage_bytes", labels) == 500_000_000


def test_it_maps_a_sluid_directory_to_the_job_id_and_keeps_it(tree: Tree) -> None:
    job = v2_job(tree, SCOPE, "s8FXKTA79XAR00", tasks={"step_0/user/task_0": [101]})
    tree.process(101, environ={"SLURM_JOB_ID": "123456", "SLURM_JOB_ACCOUNT": "a"})
    registry = registry_for(tree)
    labels = {"jobid": "123456", "user": user_name(ALICE)}
    assert registry.get_sample_value("jobs_processes", labels) == 1
    # The processes exit; the job (and its directory) stay: still labelled by its job ID.
    (job / "step_0/user/task_0/cgroup.procs").write_text("")
    assert registry.get_sample_value("jobs_processes", labels) == 0
    assert registry.get_sample_value("jobs_info", {
        **labels, "uid": str(ALICE), "account": "a", "partition": "", "scheduler": "slurm",
        "cgroup": f"{SCOPE}/s8FXKTA79XAR00"}) == 1


def test_it_labels_an_unmappable_sluid_job_by_its_directory(tree: Tree) -> None:
    v2_job(tree, SCOPE, "s0000000000001", tasks={"step_extern/user/task_0": []})
    registry = registry_for(tree)
    assert registry.get_sample_value(
        "jobs_processes", {"jobid": "s0000000000001", "user": ""}) == 0


def test_it_finds_the_scopes_of_several_slurmd_and_of_a_slurmd_outside_systemd(
        tree: Tree) -> None:
    v2_job(tree, "system.slice/node1_slurmstepd.scope", "job_1")
    v2_job(tree, "system.slice/node2_slurmstepd.scope", "job_2")
    v2_job(tree, "slurmstepd.scope", "job_3")
    (tree.cgroup / SCOPE / "system").mkdir(parents=True)  # slurmstepd infinity, not a job
    (tree.cgroup / "system.slice" / "slurmd.service" / "job_4").mkdir(parents=True)
    jobs = SlurmV2().discover(str(tree.cgroup), ErrorCounts())
    assert sorted((job.key, job.jobid) for job in jobs) == [
        ("slurmstepd.scope/job_3", "3"),
        ("system.slice/node1_slurmstepd.scope/job_1", "1"),
        ("system.slice/node2_slurmstepd.scope/job_2", "2"),
    ]


def test_it_takes_the_uid_from_slurm_job_uid_when_only_root_processes_remain(
        tree: Tree) -> None:
    v2_job(tree, SCOPE, "job_80", tasks={"step_0/user/task_0": [101]})
    tree.process(101, uid=0, environ={"SLURM_JOB_ID": "80", "SLURM_JOB_UID": str(ALICE)})
    registry = registry_for(tree)
    assert registry.get_sample_value(
        "jobs_processes", {"jobid": "80", "user": user_name(ALICE)}) == 1


def test_it_reads_an_empty_cpuset_as_unknown(tree: Tree) -> None:
    job: Path = v2_job(tree, SCOPE, "job_81", cpus="")
    (job / "cpuset.cpus").write_text("")
    registry = registry_for(tree)
    assert registry.get_sample_value("jobs_cpus", {"jobid": "81", "user": ""}) is None


def test_it_leaves_out_slurmstepd_wherever_it_sits(tree: Tree) -> None:
    # A layout where slurmstepd is not in step_*/slurm: still not a job process.
    v2_job(tree, SCOPE, "job_79", tasks={"step_0/stepd": [90], "step_0/user/task_0": [101]})
    tree.process(90, uid=0, comm="slurmstepd", threads=5)
    tree.process(101, threads=2)
    registry = registry_for(tree)
    labels = {"jobid": "79", "user": user_name(ALICE)}
    assert registry.get_sample_value("jobs_processes", labels) == 1
    assert registry.get_sample_value("jobs_threads", labels) == 2
