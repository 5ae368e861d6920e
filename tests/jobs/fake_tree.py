"""Fixture cgroup and /proc trees written into tmp_path, in the kernel's file formats."""

from __future__ import annotations

import os
import pwd
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from prometheus_client import CollectorRegistry

PAGE = os.sysconf("SC_PAGE_SIZE")
HZ = os.sysconf("SC_CLK_TCK")
ALICE = 4242  # a uid that usually has no passwd entry: then labelled by its number


def user_name(uid: int) -> str:
    """What the exporter labels `uid` with on this machine."""
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


@dataclass
class Tree:
    root: Path

    @property
    def cgroup(self) -> Path:
        return self.root / "cgroup"

    @property
    def proc(self) -> Path:
        return self.root / "proc"

    def files(self, directory: Path, files: Mapping[str, str]) -> Path:
        directory.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            (directory / name).write_text(text)
        return directory

    def tasks(self, job_dir: Path, tasks: Mapping[str, Sequence[int]]) -> None:
        """`{"step_0/task_0": [101, 102]}` -> cgroup.procs files below the job directory."""
        self.files(job_dir, {"cgroup.procs": ""})
        for relative, pids in tasks.items():
            parts = Path(relative).parts
            for depth in range(1, len(parts)):
                self.files(job_dir.joinpath(*parts[:depth]), {"cgroup.procs": ""})
            self.files(job_dir / relative, {"cgroup.procs": "".join(f"{p}\n" for p in pids)})

    def process(
        self,
        pid: int,
        *,
        starttime: int = 5000,
        threads: int = 1,
        rss_pages: int = 100,
        io: Optional[tuple[int, int, int, int]] = (0, 0, 0, 0),
        fds: Sequence[str] = ("/dev/null",),
        cwd: str = "/home/alice",
        environ: Optional[Mapping[str, str]] = None,
        uid: int = ALICE,
        comm: str = "python (x)",
    ) -> Path:
        """A /proc/<pid> directory: stat, statm, status, io (read_bytes, write_bytes, syscr,
        syscw), fd/ links to `fds`, task/ with a directory per thread, cwd link, environ."""
        base = self.proc / str(pid)
        (base / "fd").mkdir(parents=True, exist_ok=True)
        # Fields 3..: state, then 16 fields, num_threads (20), itrealvalue, starttime (22),
        # vsize, rss (24), and the rest.
        fields = ["S", *["0"] * 16, str(threads), "0", str(starttime), "0", str(rss_pages),
                  *["0"] * 28]
        (base / "stat").write_text(f"{pid} ({comm}) {' '.join(fields)}\n")
        # size, resident, shared, text, lib (0), data, dirty (0): pages.
        (base / "statm").write_text(f"{rss_pages * 3} {rss_pages} {rss_pages // 2} 10 0 "
                                    f"{rss_pages} 0\n")
        # As in /proc, the link count of task/ is 2 + its number of threads (directories).
        for tid in range(pid, pid + threads):
            (base / "task" / str(tid)).mkdir(parents=True, exist_ok=True)
        (base / "status").write_text(
            f"Name:\t{comm}\nState:\tS (sleeping)\nUid:\t{uid}\t{uid}\t{uid}\t{uid}\n")
        if io is not None:
            self.io(pid, io)
        for number, target in enumerate(fds):
            os.symlink(target, base / "fd" / str(number))
        os.symlink(cwd, base / "cwd")
        env = environ or {}
        (base / "environ").write_bytes(
            b"".join(f"{key}={value}".encode() + b"\0" for key, value in env.items()))
        return base

    def io(self, pid: int, io: tuple[int, int, int, int]) -> None:
        """/proc/<pid>/io with (read_bytes, write_bytes, syscr, syscw), written anew."""
        read_bytes, write_bytes, syscr, syscw = io
        (self.proc / str(pid) / "io").write_text(
            f"rchar: {read_bytes * 2}\nwchar: {write_bytes * 2}\nsyscr: {syscr}\n"
            f"syscw: {syscw}\nread_bytes: {read_bytes}\nwrite_bytes: {write_bytes}\n"
            "cancelled_write_bytes: 0\n")


def v1_slurm_job(
    tree: Tree,
    jobid: str = "42",
    *,
    uid: int = ALICE,
    top: str = "slurm",
    tasks: Mapping[str, Sequence[int]] = {},
    cpu_controller: str = "cpuacct",
    usage_ns: int = 12_500_000_000,
    ticks: tuple[int, int] = (1000, 200),
    percpu: Sequence[int] = (1_000_000_000, 2_000_000_000, 3_000_000_000, 6_500_000_000),
    cpus: str = "1-2",
    memory_stat: Optional[Mapping[str, int]] = None,
    usage_bytes: int = 300_000_000,
    max_usage_bytes: int = 400_000_000,
    limit_bytes: int = 1_073_741_824,
    failcnt: int = 3,
) -> dict[str, Path]:
    """A Slurm cgroup v1 job in freezer, cpuacct, memory and cpuset; the job dirs by controller."""
    relative = Path(top) / f"uid_{uid}" / f"job_{jobid}"
    dirs = {c: tree.cgroup / c / relative for c in ("freezer", cpu_controller, "memory", "cpuset")}
    for directory in dirs.values():
        tree.tasks(directory, tasks)
    tree.files(dirs[cpu_controller], {
        "cpuacct.usage": f"{usage_ns}\n",
        "cpuacct.stat": f"user {ticks[0]}\nsystem {ticks[1]}\n",
        "cpuacct.usage_percpu": " ".join(str(ns) for ns in percpu) + " \n",
    })
    tree.files(dirs["cpuset"], {"cpuset.cpus": f"{cpus}\n"})
    stat = memory_stat if memory_stat is not None else {
        "cache": 0, "rss": 0, "shmem": 0,
        "total_cache": 50_000_000, "total_rss": 200_000_000, "total_shmem": 10_000_000,
        "total_mapped_file": 1_000_000,
    }
    tree.files(dirs["memory"], {
        "memory.stat": "".join(f"{key} {value}\n" for key, value in stat.items()),
        "memory.usage_in_bytes": f"{usage_bytes}\n",
        "memory.max_usage_in_bytes": f"{max_usage_bytes}\n",
        "memory.limit_in_bytes": f"{limit_bytes}\n",
        "memory.failcnt": f"{failcnt}\n",
        "memory.oom_control": "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n",
    })
    return dirs


def v2_job(
    tree: Tree,
    parent: str,
    name: str,
    *,
    tasks: Mapping[str, Sequence[int]] = {},
    cpu_usec: tuple[int, int, int] = (7_000_000, 5_000_000, 2_000_000),
    cpus: str = "0-3",
    peak: Optional[int] = 900_000_000,
    max_bytes: str = "2147483648",
    memory_stat: Optional[Mapping[str, int]] = None,
) -> Path:
    """A cgroup v2 job directory `<cgroup>/<parent>/<name>` with its files."""
    base = tree.cgroup / parent
    tree.files(base, {"cgroup.controllers": "cpuset cpu memory\n"})
    job = base / name
    tree.tasks(job, tasks)
    stat = memory_stat if memory_stat is not None else {
        "anon": 300_000_000, "file": 100_000_000, "shmem": 20_000_000, "swapcached": 4096,
        "file_mapped": 5_000_000,
    }
    files = {
        "cgroup.controllers": "cpuset cpu memory\n",
        "cpu.stat": f"usage_usec {cpu_usec[0]}\nuser_usec {cpu_usec[1]}\n"
                    f"system_usec {cpu_usec[2]}\nnr_periods 0\n",
        "cpuset.cpus.effective": f"{cpus}\n",
        "memory.stat": "".join(f"{key} {value}\n" for key, value in stat.items()),
        "memory.current": "500000000\n",
        "memory.max": f"{max_bytes}\n",
        "memory.events": "low 0\nhigh 0\nmax 5\noom 1\noom_kill 2\noom_group_kill 0\n",
    }
    if peak is not None:
        files["memory.peak"] = f"{peak}\n"
    tree.files(job, files)
    return job


class Scrape:
    """One collection of a registry; `get_sample_value` does a new collection on every call."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.samples = {
            (sample.name, frozenset(sample.labels.items())): sample.value
            for family in registry.collect() for sample in family.samples
        }

    def value(self, name: str, labels: Optional[Mapping[str, str]] = None) -> Optional[float]:
        return self.samples.get((name, frozenset((labels or {}).items())))

    def errors(self, kind: str) -> Optional[float]:
        return self.value("jobs_exporter_errors_total", {"kind": kind})
