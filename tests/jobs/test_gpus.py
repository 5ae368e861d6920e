"""GPU names resolved to UUIDs through NVML (a fake pynvml) or the driver's /proc files."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry

from clusterwatch.jobs.exporter import JobsCollector
from clusterwatch.jobs.file_reader import ErrorCounts, FileReader
from clusterwatch.jobs.gpus import GpuInventory, GpuUsage
from tests.jobs.fake_nvml import UUID_0, UUID_1, FakeNvml, NoDriver
from tests.jobs.fake_tree import ALICE, Scrape, Tree, user_name, v1_slurm_job


def inventory(tree: Tree, nvml: Any) -> tuple[GpuInventory, ErrorCounts]:
    errors = ErrorCounts()
    gpus = GpuInventory(str(tree.proc), FileReader(errors), nvml)
    gpus.refresh()
    return gpus, errors


def test_it_resolves_slurm_gpu_numbers_through_nvml_minor_numbers(tree: Tree) -> None:
    v1_slurm_job(tree, "42", tasks={"step_0/task_0": [101]})
    tree.process(101, environ={"SLURM_JOB_ID": "42", "SLURM_JOB_GPUS": "10,11"})
    nvml = FakeNvml([UUID_0, UUID_1], broken={UUID_1})
    registry = CollectorRegistry()
    registry.register(JobsCollector(tree.cgroup, tree.proc, nvml=nvml))
    scrape = Scrape(registry)
    labels = {"jobid": "42", "user": user_name(ALICE)}
    assert scrape.value("jobs_gpus", labels) == 2
    assert scrape.value("jobs_gpu_info", {**labels, "gpu": "10", "gpu_uuid": UUID_0}) == 1
    assert scrape.value("jobs_gpu_info", {**labels, "gpu": "11", "gpu_uuid": UUID_1}) == 1
    assert scrape.value("jobs_gpu_utilization_ratio", {**labels, "gpu_uuid": UUID_0}) == 0.75
    assert scrape.value("jobs_gpu_memory_used_bytes", {**labels, "gpu_uuid": UUID_0}) == 1e9
    assert scrape.value("jobs_gpu_utilization_ratio", {**labels, "gpu_uuid": UUID_1}) is None
    assert scrape.errors("gpu") == 1
    Scrape(registry)
    assert nvml.inits == 1  # initialised once, not per scrape


def test_it_finds_a_process_less_jobs_gpus_in_its_devices_cgroup(tree: Tree) -> None:
    v1_slurm_job(tree, "42")
    tree.files(tree.cgroup / f"devices/slurm/uid_{ALICE}/job_42", {
        "cgroup.procs": "",
        "devices.list": "c 195:255 rwm\nc 195:254 rwm\nc 195:1 rwm\nc 1:3 rwm\nb 8:0 r\n"})
    tree.files(tree.proc / "driver/nvidia/gpus/0000:3b:00.0",
               {"information": f"Model: \t H100\nDevice Minor: \t 1\nGPU UUID: \t {UUID_1}\n"})
    registry = CollectorRegistry()
    registry.register(JobsCollector(tree.cgroup, tree.proc, nvml=NoDriver()))
    scrape = Scrape(registry)
    labels = {"jobid": "42", "user": user_name(ALICE), "gpu": "1", "gpu_uuid": UUID_1}
    assert scrape.value("jobs_processes", {"jobid": "42", "user": user_name(ALICE)}) == 0
    assert scrape.value("jobs_gpu_info", labels) == 1
    assert scrape.errors("gpu") == 0  # no NVML is a normal state of a node


def test_it_resolves_short_and_unknown_names(tree: Tree) -> None:
    gpus, _ = inventory(tree, FakeNvml([UUID_0, UUID_1]))
    assert gpus.resolve("GPU-604ac76c") == UUID_0
    assert gpus.resolve("GPU-1b2c") == UUID_1
    assert gpus.resolve("GPU-") == ""  # ambiguous
    assert gpus.resolve("3") == ""
    assert gpus.resolve("MIG-abc") == "MIG-abc"
    assert gpus.usage(UUID_1) == GpuUsage(0.75, 2_000_000_000)


def test_it_keeps_full_uuids_without_any_inventory(tree: Tree) -> None:
    gpus, _ = inventory(tree, None)
    assert gpus.resolve(UUID_0) == UUID_0
    assert gpus.resolve("0") == ""
    assert gpus.usage(UUID_0) is None


def test_it_trusts_the_devices_cgroup_over_the_environment(tree: Tree) -> None:
    v1_slurm_job(tree, "42", tasks={"step_0/task_0": [101]})
    tree.process(101, environ={"SLURM_JOB_ID": "42", "SLURM_JOB_GPUS": "0"})
    tree.files(tree.cgroup / f"devices/slurm/uid_{ALICE}/job_42",
               {"cgroup.procs": "101\n", "devices.list": "c 195:255 rwm\nc 195:11 rwm\n"})
    registry = CollectorRegistry()
    registry.register(JobsCollector(tree.cgroup, tree.proc, nvml=FakeNvml([UUID_0, UUID_1])))
    scrape = Scrape(registry)
    labels = {"jobid": "42", "user": user_name(ALICE)}
    assert scrape.value("jobs_gpus", labels) == 1
    assert scrape.value("jobs_gpu_info", {**labels, "gpu": "11", "gpu_uuid": UUID_1}) == 1


def test_it_falls_back_to_the_environment_when_devices_are_not_constrained(tree: Tree) -> None:
    v1_slurm_job(tree, "42", tasks={"step_0/task_0": [101]})
    tree.process(101, environ={"SLURM_JOB_ID": "42", "SLURM_JOB_GPUS": "10"})
    tree.files(tree.cgroup / f"devices/slurm/uid_{ALICE}/job_42",
               {"cgroup.procs": "101\n", "devices.list": "a *:* rwm\n"})
    registry = CollectorRegistry()
    registry.register(JobsCollector(tree.cgroup, tree.proc, nvml=FakeNvml([UUID_0])))
    labels = {"jobid": "42", "user": user_name(ALICE), "gpu": "10", "gpu_uuid": UUID_0}
    assert Scrape(registry).value("jobs_gpu_info", labels) == 1
