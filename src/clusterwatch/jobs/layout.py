"""What every scheduler's cgroup layout shares: the job record, the source interface, the
directory listing and the names that more than one layout reads.

The layouts (`slurm_v1`, `slurm_v2`, `htcondor`) import from here and the dispatcher
(`discovery`) imports the layouts, so the dependency runs one way: a layout never needs the
dispatcher.

Symbolic links are never followed: a cgroup filesystem has none, so one is not a cgroup,
and following it (to `/`, say) would walk whatever it points to.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Optional, Protocol

from clusterwatch.jobs.file_reader import ErrorCounts, count_failure
from clusterwatch.jobs.label_text import label_text

# Slurm 26.05 names job directories by the job's SLUID unless CgroupJobIdPaths=yes: "s"
# and 13 Crockford base32 characters (e.g. s8FXKTA79XAR00).
SLURM_JOB_DIR = re.compile(r"job_(?P<jobid>[0-9]+)|(?P<sluid>s[0-9A-Z]{13})")
# Slurm's per-step daemon. It lives in the job's cgroups, in a place that depends on the
# cgroup version, the controller and the Slurm version: on v1, in freezer's job_<id>/ itself
# (where the exporter lists processes), in memory's and cpuset's step_<s>/; on v2, in
# step_<s>/slurm/. It is told apart by its command name, not by where it sits.
SLURMSTEPD = b"slurmstepd"

# cgroup v1 hierarchies that hold CPU accounting: cpuacct alone, or co-mounted with cpu
# (named either way round).
CPU_CONTROLLERS = ("cpuacct", "cpu,cpuacct", "cpuacct,cpu")
# cgroup v1: where to list a job's processes, in order of preference. Freezer first: it is
# the scheduler's own tracking hierarchy (Slurm's proctrack/cgroup), so every process the
# scheduler tracks is there.
PROCS_CONTROLLERS = ("freezer", *CPU_CONTROLLERS, "memory", "cpuset", "pids", "devices")


@dataclass(frozen=True)
class JobCgroup:
    """One job's cgroup directories, as found on disk.

    `key` is the job directory relative to its hierarchy (unique on the node); `jobid` and
    `uid` are set when the path carries them, else they come from the job's processes.
    `name` and `key` become label values: bytes of the directory's name that are not UTF-8
    are written as `\\xNN` in them (the `*_dir` paths keep the name as it is on disk).
    A directory is None when that controller is not mounted or not used for the job.
    """

    scheduler: str
    key: str
    name: str
    inode: int
    cgroup_version: int
    jobid: Optional[str] = None
    uid: Optional[int] = None
    cpu_dir: Optional[str] = None
    memory_dir: Optional[str] = None
    cpuset_dir: Optional[str] = None
    devices_dir: Optional[str] = None
    procs_dir: Optional[str] = None
    # Child cgroups holding the scheduler's own daemons, not the job's processes
    # (Slurm v2: step_N/slurm holds slurmstepd). Their usage stays in the cgroup totals.
    daemon_dirs: tuple[str, ...] = ()
    # The command name (/proc/<pid>/stat comm) of the scheduler's daemon that runs inside
    # the job's cgroups, wherever the layout puts it; such a process owned by root is not
    # one of the job's processes (see procfs.ProcReader.sample).
    daemon_comm: bytes = b""
    # Whether the directories right below are the scheduler's steps (Slurm: step_*).
    has_steps: bool = False

    def __post_init__(self) -> None:
        # Every layout's names pass here: none can hand the exposition undecodable text.
        object.__setattr__(self, "name", label_text(self.name))
        object.__setattr__(self, "key", label_text(self.key))


class JobSource(Protocol):
    """One cgroup layout of one scheduler."""

    scheduler: str

    def discover(self, cgroup_root: str, errors: ErrorCounts) -> list[JobCgroup]:
        """The jobs of this layout under `cgroup_root`; [] when the layout is absent.
        Directories that cannot be listed are counted in `errors` and skipped."""
        ...


def subdirectories(path: str, errors: ErrorCounts) -> Iterator[os.DirEntry[str]]:
    """The directories directly in `path`, symbolic links left out; none when `path` is
    missing or vanishes, or cannot be listed (then counted in `errors`)."""
    try:
        with os.scandir(path) as entries:
            found = [entry for entry in entries if _is_dir(entry)]
    except (FileNotFoundError, NotADirectoryError):
        return iter(())
    except OSError as exc:
        count_failure(errors, path, exc)
        return iter(())
    return iter(found)


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False
