"""The collector across scrapes and failures: state kept, one bad job never breaks others."""

from __future__ import annotations

import errno
import shutil
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from clusterwatch.jobs import sampler as sampler_module
from clusterwatch.jobs.cgroup_stats import read_stats
from clusterwatch.jobs.exporter import JobsCollector
from clusterwatch.jobs.file_reader import read_file
from tests.jobs.fake_tree import ALICE, Scrape, Tree, user_name, v1_slurm_job, v2_job

LABELS = {"jobid": "42", "user": user_name(ALICE)}


def registry_for(tree: Tree, **kwargs: Any) -> CollectorRegistry:
    registry = CollectorRegistry()
    registry.register(JobsCollector(tree.cgroup, tree.proc, nvml=None, **kwargs))
    return registry


def test_it_keeps_io_counters_when_a_process_exits(tree: Tree) -> None:
    job = v1_slurm_job(tree, "42", tasks={"step_0/task_0": [101, 102]})
    tree.process(101, io=(1000, 100, 10, 1))
    tree.process(102, io=(5000, 500, 50, 5))
    registry = registry_for(tree)
    assert registry.get_sample_value("jobs_read_bytes_total", LABELS) == 6000
    # 102 exits: its PID leaves cgroup.procs and /proc.
    (job["freezer"] / "step_0/task_0/cgroup.procs").write_text("101\n")
    shutil.rmtree(tree.proc / "102")
    assert registry.get_sample_value("jobs_read_bytes_total", LABELS) == 6000
    assert registry.get_sample_value("jobs_write_operations_total", LABELS) == 6
    assert registry.get_sample_value("jobs_processes", LABELS) == 1
    assert registry.get_sample_value("jobs_spawned_processes_total", LABELS) == 2


def test_it_survives_a_pid_listed_whose_process_is_gone(tree: Tree) -> None:
    v1_slurm_job(tree, "42", tasks={"step_0/task_0": [101, 999]})
    tree.process(101)
    scrape = Scrape(registry_for(tree))
    assert scrape.value("jobs_processes", LABELS) == 1
    assert scrape.errors("process_vanished") == 1


def test_it_counts_a_denied_cgroup_file_and_reports_the_rest(tree: Tree) -> None:
    v1_slurm_job(tree, "42")

    def opener(path: str) -> bytes:
        if path.endswith("memory.stat"):
            raise PermissionError(errno.EACCES, "Permission denied")
        return read_file(path)

    scrape = Scrape(registry_for(tree, opener=opener))
    assert scrape.value("jobs_memory_rss_bytes", LABELS) is None
    assert scrape.value("jobs_memory_usage_bytes", LABELS) == 300_000_000
    assert scrape.errors("permission_denied") == 1


def test_it_counts_malformed_cgroup_files_and_reports_the_rest(tree: Tree) -> None:
    job = v1_slurm_job(tree, "42")
    (job["cpuacct"] / "cpuacct.usage").write_text("twelve\n")
    (job["cpuset"] / "cpuset.cpus").write_text("3-1\n")
    (job["freezer"] / "cgroup.procs").write_text("12 x\n")
    scrape = Scrape(registry_for(tree))
    assert scrape.value("jobs_cpu_seconds_total", LABELS) is None
    assert scrape.value("jobs_cpus", LABELS) is None
    assert scrape.value("jobs_cpu_user_seconds_total", LABELS) == 10.0
    assert scrape.errors("malformed") == 3


def test_it_reports_the_other_jobs_when_one_job_fails(
        tree: Tree, monkeypatch: pytest.MonkeyPatch) -> None:
    v1_slurm_job(tree, "42")
    v1_slurm_job(tree, "43")
    real = read_stats

    def failing(job, files):  # type: ignore[no-untyped-def]
        if job.jobid == "43":
            raise RuntimeError("a bug in one job's reading")
        return real(job, files)

    monkeypatch.setattr(sampler_module, "read_stats", failing)
    scrape = Scrape(registry_for(tree))
    assert scrape.value("jobs_cpu_seconds_total", LABELS) == 12.5
    assert scrape.value("jobs_exporter_jobs") == 1
    assert scrape.errors("job_failed") == 1


def test_it_drops_a_job_that_ended_between_scrapes(tree: Tree) -> None:
    job = v2_job(tree, "system.slice/slurmstepd.scope", "job_42")
    registry = registry_for(tree)
    assert registry.get_sample_value("jobs_exporter_jobs") == 1
    shutil.rmtree(job)
    assert registry.get_sample_value("jobs_exporter_jobs") == 0
    assert registry.get_sample_value("jobs_cpu_seconds_total", {"jobid": "42", "user": ""}) is None


def test_it_reports_a_job_id_found_twice_once(tree: Tree) -> None:
    v1_slurm_job(tree, "42", top="slurm_node1")
    v1_slurm_job(tree, "42", top="slurm_node2")
    scrape = Scrape(registry_for(tree))
    assert scrape.value("jobs_exporter_jobs") == 1
    assert scrape.errors("duplicate_job") == 1


@pytest.mark.parametrize(("scratch", "expected"), [("/scratch", 1.0), ("/scratch2", 0.0)])
def test_it_detects_scratch_from_open_files_by_whole_components(
        tree: Tree, scratch: str, expected: float) -> None:
    v1_slurm_job(tree, "42", tasks={"step_0/task_0": [101, 102]})
    tree.process(101, fds=["/dev/null", "/home/alice/x"])
    tree.process(102, fds=["pipe:[77]", "/scratch/alice/run/out.dat"])
    registry = registry_for(tree, scratch_paths=[scratch])
    assert registry.get_sample_value("jobs_uses_scratch", LABELS) == expected


def test_it_detects_scratch_from_the_working_directory(tree: Tree) -> None:
    v1_slurm_job(tree, "42", tasks={"step_0/task_0": [101]})
    tree.process(101, cwd="/scratch/alice/run")
    registry = registry_for(tree, scratch_paths=["/scratch"])
    assert registry.get_sample_value("jobs_uses_scratch", LABELS) == 1.0


def test_it_counts_io_as_unknown_when_every_process_is_unreadable(tree: Tree) -> None:
    v1_slurm_job(tree, "42", tasks={"step_0/task_0": [101]})
    tree.process(101, io=None)
    (tree.proc / "101" / "io").mkdir()  # reading a directory fails with EISDIR
    scrape = Scrape(registry_for(tree))
    assert scrape.value("jobs_processes", LABELS) == 1
    assert scrape.value("jobs_read_bytes_total", LABELS) is None
    assert scrape.errors("unreadable") == 1


def test_it_exports_its_own_duration(tree: Tree) -> None:
    registry = registry_for(tree)
    duration = registry.get_sample_value("jobs_exporter_collect_duration_seconds")
    assert duration is not None and 0 <= duration < 5


def test_it_rejects_an_unknown_scheduler(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown scheduler"):
        JobsCollector(tmp_path, tmp_path, scheduler="pbs")
