"""HTCondor slot cgroups (v1 and v2): job ID from the job ad the job's environment names."""

from __future__ import annotations

import os

from prometheus_client import CollectorRegistry

from clusterwatch.jobs.exporter import JobsCollector
from clusterwatch.jobs.file_reader import ErrorCounts
from clusterwatch.jobs.htcondor import HTCondorV1, HTCondorV2
from tests.jobs.fake_jobs import AD_PATH, SLOT, job_process
from tests.jobs.fake_tree import ALICE, Tree, user_name, v1_slurm_job, v2_job

UUID = "GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52"


def registry_for(tree: Tree) -> CollectorRegistry:
    registry = CollectorRegistry()
    registry.register(JobsCollector(tree.cgroup, tree.proc, scheduler="htcondor", nvml=None))
    return registry


def driver_gpu(tree: Tree, minor: int, uuid: str) -> None:
    tree.files(tree.proc / "driver/nvidia/gpus" / f"0000:{minor:02x}:00.0",
               {"information": f"Model: \t NVIDIA H100\nDevice Minor: \t {minor}\n"
                               f"GPU UUID: \t {uuid}\n"})


def test_it_reports_a_v2_slot_cgroup_under_the_job_id_of_its_ad(tree: Tree) -> None:
    v2_job(tree, "system.slice/htcondor", SLOT, tasks={"": [201]})
    job_process(tree, 201)
    driver_gpu(tree, 0, UUID)
    registry = registry_for(tree)
    labels = {"jobid": "1234.5", "user": user_name(ALICE)}
    assert registry.get_sample_value("jobs_cpu_seconds_total", labels) == 7.0
    assert registry.get_sample_value("jobs_processes", labels) == 1
    assert registry.get_sample_value("jobs_steps", labels) is None
    # HTCondor's short GPU ID resolved to the full UUID through the driver's GPU list.
    assert registry.get_sample_value(
        "jobs_gpu_info", {**labels, "gpu": "GPU-604ac76c", "gpu_uuid": UUID}) == 1
    assert registry.get_sample_value("jobs_info", {
        **labels, "uid": str(ALICE), "account": "group_atlas.alice", "partition": "",
        "scheduler": "htcondor", "cgroup": f"system.slice/htcondor/{SLOT}"}) == 1


def test_it_reports_a_v1_slot_cgroup(tree: Tree) -> None:
    for controller in ("freezer", "cpuacct", "memory"):
        tree.tasks(tree.cgroup / controller / "htcondor" / SLOT, {"": [201]})
    tree.files(tree.cgroup / "cpuacct/htcondor" / SLOT,
               {"cpuacct.usage": "3000000000\n", "cpuacct.stat": "user 200\nsystem 100\n"})
    tree.files(tree.cgroup / "memory/htcondor" / SLOT,
               {"memory.stat": "total_rss 1000\ntotal_cache 2000\ntotal_shmem 0\n"})
    job_process(tree, 201)
    jobs = HTCondorV1().discover(str(tree.cgroup), ErrorCounts())
    assert [(job.key, job.cgroup_version) for job in jobs] == [(f"htcondor/{SLOT}", 1)]
    registry = registry_for(tree)
    labels = {"jobid": "1234.5", "user": user_name(ALICE)}
    assert registry.get_sample_value("jobs_cpu_seconds_total", labels) == 3.0
    assert registry.get_sample_value("jobs_memory_rss_bytes", labels) == 1000
    assert registry.get_sample_value("jobs_memory_cache_bytes", labels) == 2000


def test_it_labels_a_slot_without_readable_ad_by_its_cgroup_name(tree: Tree) -> None:
    v2_job(tree, "htcondor", SLOT, tasks={"": []})
    registry = registry_for(tree)
    assert registry.get_sample_value("jobs_processes", {"jobid": SLOT, "user": ""}) == 0


def test_it_looks_only_at_htcondor_layouts_when_told(tree: Tree) -> None:
    v1_slurm_job(tree, "42")
    v2_job(tree, "system.slice/condor.service/htcondor", SLOT)
    registry = registry_for(tree)
    assert registry.get_sample_value("jobs_exporter_jobs") == 1
    assert [job.key for job in HTCondorV2().discover(str(tree.cgroup), ErrorCounts())] == [
        f"system.slice/condor.service/htcondor/{SLOT}"]


def test_it_never_reads_a_fifo_named_by_the_environment(tree: Tree) -> None:
    v2_job(tree, "htcondor", SLOT, tasks={"": [201]})
    job_process(tree, 201)
    ad_file = tree.proc / "201/root" / AD_PATH.lstrip("/")
    ad_file.unlink()
    os.mkfifo(ad_file)  # opening it for reading would block a naive exporter forever
    registry = registry_for(tree)
    labels = {"jobid": SLOT, "user": user_name(ALICE)}
    assert registry.get_sample_value("jobs_processes", labels) == 1
