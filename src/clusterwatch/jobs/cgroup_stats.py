"""A job's CPU, cpuset and memory readings from its cgroup files, v1 or v2, in base units.

Definitions (the docs' metric table repeats them):
- rss: anonymous memory plus swap cache, the kernel's own "rss" of cgroup v1
  (memory.stat `total_rss`) and `anon + swapcached` on v2; not the sum of /proc RSS, which
  counts shared pages once per process, and not memory.current, which adds page cache.
- cache: page cache (v1 `total_cache`, v2 `file`); it includes shmem (tmpfs, /dev/shm).
- usage: what the memory limit is enforced against (v1 usage_in_bytes, v2 memory.current).
A reading that a layout lacks stays None and its metric is left out for that job.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Callable, Optional, TypeVar

from clusterwatch.jobs import cgroup_parse
from clusterwatch.jobs.file_reader import FileReader
from clusterwatch.jobs.layout import JobCgroup

NS_PER_S = 1e9
USEC_PER_S = 1e6
USER_HZ = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

T = TypeVar("T")


@dataclass
class CgroupStats:
    cpu_seconds: Optional[float] = None
    cpu_user_seconds: Optional[float] = None
    cpu_system_seconds: Optional[float] = None
    cpus: Optional[tuple[int, ...]] = None
    core_seconds: dict[int, float] = field(default_factory=dict)
    memory_rss_bytes: Optional[int] = None
    memory_cache_bytes: Optional[int] = None
    memory_shmem_bytes: Optional[int] = None
    memory_usage_bytes: Optional[int] = None
    memory_max_usage_bytes: Optional[int] = None
    memory_limit_bytes: Optional[int] = None
    memory_failcnt: Optional[int] = None
    memory_oom_kills: Optional[int] = None


def read_stats(job: JobCgroup, files: FileReader) -> CgroupStats:
    stats = CgroupStats()
    read = _Parsed(files)
    if job.cgroup_version == 1:
        _read_v1(job, read, stats)
    else:
        _read_v2(job, read, stats)
    return stats


class _Parsed:
    """Read a file and parse it; absent -> None, malformed -> None and counted."""

    def __init__(self, files: FileReader) -> None:
        self.files = files

    def __call__(self, directory: Optional[str], name: str,
                 parse: Callable[[str], T]) -> Optional[T]:
        if directory is None:
            return None
        path = f"{directory}/{name}"
        text = self.files.cgroup_text(path)
        if text is None:
            return None
        try:
            return parse(text)
        except ValueError as exc:
            self.files.malformed(path, exc)
            return None


def _read_v1(job: JobCgroup, read: _Parsed, stats: CgroupStats) -> None:
    usage = read(job.cpu_dir, "cpuacct.usage", cgroup_parse.parse_int)
    if usage is not None:
        stats.cpu_seconds = usage / NS_PER_S
    ticks = read(job.cpu_dir, "cpuacct.stat", cgroup_parse.parse_flat_keyed)
    if ticks is not None:
        stats.cpu_user_seconds = _scaled(ticks.get("user"), USER_HZ)
        stats.cpu_system_seconds = _scaled(ticks.get("system"), USER_HZ)
    stats.cpus = (read(job.cpuset_dir, "cpuset.cpus", cgroup_parse.parse_cpulist)
                  or read(job.cpuset_dir, "cpuset.effective_cpus", cgroup_parse.parse_cpulist)
                  or None)
    percpu = read(job.cpu_dir, "cpuacct.usage_percpu", cgroup_parse.parse_percpu)
    if percpu is not None:
        wanted = stats.cpus if stats.cpus else [c for c, ns in enumerate(percpu) if ns]
        stats.core_seconds = {cpu: percpu[cpu] / NS_PER_S for cpu in wanted if cpu < len(percpu)}

    memory = read(job.memory_dir, "memory.stat", cgroup_parse.parse_flat_keyed)
    if memory is not None:
        # The job directory holds no process itself: only the hierarchical total_* count.
        stats.memory_rss_bytes = memory.get("total_rss", memory.get("rss"))
        stats.memory_cache_bytes = memory.get("total_cache", memory.get("cache"))
        stats.memory_shmem_bytes = memory.get("total_shmem", memory.get("shmem"))
    stats.memory_usage_bytes = read(job.memory_dir, "memory.usage_in_bytes",
                                    cgroup_parse.parse_int)
    stats.memory_max_usage_bytes = read(job.memory_dir, "memory.max_usage_in_bytes",
                                        cgroup_parse.parse_int)
    stats.memory_limit_bytes = read(job.memory_dir, "memory.limit_in_bytes",
                                    cgroup_parse.parse_limit)
    stats.memory_failcnt = read(job.memory_dir, "memory.failcnt", cgroup_parse.parse_int)
    oom = read(job.memory_dir, "memory.oom_control", cgroup_parse.parse_flat_keyed)
    if oom is not None:
        stats.memory_oom_kills = oom.get("oom_kill")  # kernel >= 4.13


def _read_v2(job: JobCgroup, read: _Parsed, stats: CgroupStats) -> None:
    cpu = read(job.cpu_dir, "cpu.stat", cgroup_parse.parse_flat_keyed)
    if cpu is not None:
        stats.cpu_seconds = _scaled(cpu.get("usage_usec"), USEC_PER_S)
        stats.cpu_user_seconds = _scaled(cpu.get("user_usec"), USEC_PER_S)
        stats.cpu_system_seconds = _scaled(cpu.get("system_usec"), USEC_PER_S)
    stats.cpus = (read(job.cpuset_dir, "cpuset.cpus.effective", cgroup_parse.parse_cpulist)
                  or read(job.cpuset_dir, "cpuset.cpus", cgroup_parse.parse_cpulist)
                  or None)  # empty: inherited from the parent, not known here
    # No per-CPU usage exists in cgroup v2: core_seconds stays empty, never faked.

    memory = read(job.memory_dir, "memory.stat", cgroup_parse.parse_flat_keyed)
    if memory is not None:
        if "anon" in memory:
            stats.memory_rss_bytes = memory["anon"] + memory.get("swapcached", 0)
        stats.memory_cache_bytes = memory.get("file")
        stats.memory_shmem_bytes = memory.get("shmem")
    stats.memory_usage_bytes = read(job.memory_dir, "memory.current", cgroup_parse.parse_int)
    # memory.peak needs kernel >= 5.19 (RHEL 9 backported it): absent -> no max series.
    stats.memory_max_usage_bytes = read(job.memory_dir, "memory.peak", cgroup_parse.parse_int)
    stats.memory_limit_bytes = read(job.memory_dir, "memory.max", cgroup_parse.parse_limit)
    events = read(job.memory_dir, "memory.events", cgroup_parse.parse_flat_keyed)
    if events is not None:
        # "max": times usage was about to exceed memory.max, v1's failcnt counterpart.
        stats.memory_failcnt = events.get("max")
        stats.memory_oom_kills = events.get("oom_kill")


def _scaled(value: Optional[int], per_second: float) -> Optional[float]:
    return None if value is None else value / per_second
