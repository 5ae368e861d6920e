"""The exporter on this kernel's real cgroup v1 files and /proc: a child process placed in a
Slurm-shaped cgroup tree, then collected.

The tree is made under a unique `cwtest_*` directory of each real controller (never under a
`slurm*` top, so a real slurmd or another exporter on this host never sees it) and reached
through a temporary root of symlinks. Skipped where cgroup v1 is absent or not writable.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from clusterwatch.jobs.cgroup_parse import parse_cpulist
from clusterwatch.jobs.exporter import JobsCollector
from tests.jobs.fake_tree import Scrape

CONTROLLERS = ("freezer", "cpuacct", "memory", "cpuset")
JOB = Path("slurm/uid_0/job_77")
TASK = JOB / "step_0/task_0"
MIB = 1 << 20
# Waits for "go" (so that its memory is charged to the job's cgroup), then allocates 64 MiB
# and spends some CPU time, then says so and sleeps.
CHILD = """
import sys, time
sys.stdin.readline()
data = b"x" * (64 << 20)
deadline = time.process_time() + 0.3
while time.process_time() < deadline:
    sum(range(10000))
print("ready", flush=True)
time.sleep(60)
"""


@pytest.fixture
def real_root(tmp_path: Path) -> Iterator[Path]:
    if os.geteuid() != 0:
        pytest.skip("needs root to create cgroups")
    if not all(os.path.isdir(f"/sys/fs/cgroup/{c}/") for c in CONTROLLERS):
        pytest.skip("no cgroup v1 hierarchies for " + ", ".join(CONTROLLERS))
    name = f"cwtest_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    root = tmp_path / "cgroup"
    root.mkdir()
    made: list[Path] = []
    try:
        for controller in CONTROLLERS:
            top = Path("/sys/fs/cgroup", controller, name)
            try:
                top.mkdir()
            except OSError as exc:
                pytest.skip(f"cannot create a {controller} cgroup: {exc}")
            made.append(top)
            (root / controller).symlink_to(top)
            for part in (Path(), *reversed(TASK.parents[:-1]), TASK):
                directory = top / part
                if part != Path():
                    directory.mkdir()
                    made.append(directory)
                if controller == "cpuset":  # a v1 cpuset starts empty: inherit the parent's
                    for file in ("cpuset.cpus", "cpuset.mems"):
                        (directory / file).write_text((directory.parent / file).read_text())
        yield root
    finally:
        for directory in reversed(made):
            directory.rmdir()


def test_it_collects_a_real_process_in_real_cgroups(real_root: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", CHILD], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        for controller in CONTROLLERS:
            (real_root / controller / TASK / "cgroup.procs").write_text(f"{child.pid}\n")
        assert child.stdin is not None and child.stdout is not None
        child.stdin.write("go\n")
        child.stdin.flush()
        assert child.stdout.readline() == "ready\n"

        registry = CollectorRegistry()
        registry.register(JobsCollector(real_root, "/proc", nvml=None))
        scrape = Scrape(registry)
        labels = {"jobid": "77", "user": "root"}
        assert scrape.value("jobs_processes", labels) == 1
        assert scrape.value("jobs_steps", labels) == 1
        assert scrape.value("jobs_threads", labels) >= 1  # type: ignore[operator]
        cpu = scrape.value("jobs_cpu_seconds_total", labels)
        assert cpu is not None and cpu >= 0.25
        user = scrape.value("jobs_cpu_user_seconds_total", labels)
        system = scrape.value("jobs_cpu_system_seconds_total", labels)
        assert user is not None and system is not None
        assert abs(user + system - cpu) < 0.1  # ticks vs nanoseconds
        cpus = parse_cpulist((real_root / "cpuset" / JOB / "cpuset.cpus").read_text())
        assert scrape.value("jobs_cpus", labels) == len(cpus)
        per_core = [scrape.value("jobs_cpu_core_seconds_total", {**labels, "core": str(c)})
                    for c in cpus]
        assert None not in per_core
        assert abs(sum(per_core) - cpu) < 0.01  # type: ignore[arg-type]
        # memory.stat's total_rss comes from per-CPU counters the kernel folds in lazily (at
        # the latest every 2 s on 5.13 and later; on a many-CPU host a read can lag by
        # megabytes), so the memory figures are read again until the statistics caught up.
        deadline = time.monotonic() + 6
        while True:
            rss = scrape.value("jobs_memory_rss_bytes", labels)
            usage = scrape.value("jobs_memory_usage_bytes", labels)
            peak = scrape.value("jobs_memory_max_usage_bytes", labels)
            assert rss is not None and usage is not None and peak is not None
            if rss >= 64 * MIB or time.monotonic() > deadline:
                break
            time.sleep(0.2)
            scrape = Scrape(registry)
        assert 64 * MIB <= rss <= usage <= peak
        assert scrape.value("jobs_memory_limit_bytes", labels) is None  # unlimited
        assert scrape.value("jobs_memory_process_rss_bytes", labels) >= 64 * MIB  # type: ignore[operator]
        assert scrape.value("jobs_read_operations_total", labels) >= 1  # type: ignore[operator]
        assert scrape.value("jobs_open_files", labels) >= 3  # type: ignore[operator]
        assert scrape.errors("process_vanished") == 0
    finally:
        child.kill()
        child.wait()


GROWER = """
import sys, time
sys.stdin.readline()
data = b"x" * (48 << 20)
deadline = time.process_time() + 0.2
while time.process_time() < deadline:
    sum(range(10000))
print("grown", flush=True)
time.sleep(60)
"""


def test_it_sees_every_change_between_collections_a_moment_apart(real_root: Path) -> None:
    """The files kept open between collections give what is true at each read: a process
    that joined or left the job, memory and CPU time that grew (an open cgroup v1
    cgroup.procs would list the same PIDs again for a second: it is never kept open)."""
    first = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    second: subprocess.Popen[str] | None = None
    try:
        for controller in CONTROLLERS:
            (real_root / controller / TASK / "cgroup.procs").write_text(f"{first.pid}\n")
        collector = JobsCollector(real_root, "/proc", nvml=None)
        [before] = collector.collect_samples()[0]
        assert before.processes == 1 and collector._sampler.files.held
        second = subprocess.Popen([sys.executable, "-c", GROWER], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        for controller in CONTROLLERS:
            (real_root / controller / TASK / "cgroup.procs").write_text(f"{second.pid}\n")
        assert second.stdin is not None and second.stdout is not None
        second.stdin.write("go\n")
        second.stdin.flush()
        assert second.stdout.readline() == "grown\n"
        [grown] = collector.collect_samples()[0]
        assert grown.processes == 2 and grown.spawned == 2
        assert grown.cgroup.memory_usage_bytes is not None
        assert before.cgroup.memory_usage_bytes is not None
        assert grown.cgroup.memory_usage_bytes >= before.cgroup.memory_usage_bytes + 40 * MIB
        assert grown.process_rss_bytes >= before.process_rss_bytes + 40 * MIB
        assert grown.cgroup.cpu_seconds is not None and before.cgroup.cpu_seconds is not None
        assert grown.cgroup.cpu_seconds >= before.cgroup.cpu_seconds + 0.15
        first.kill()
        first.wait()
        [after] = collector.collect_samples()[0]
        assert (after.processes, after.spawned) == (1, 2)
        assert collector.errors.snapshot()["process_vanished"] == 0
    finally:
        for process in (first, second):
            if process is not None and process.poll() is None:
                process.kill()
                process.wait()
