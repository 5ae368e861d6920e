"""Slurm on cgroup v1: `<root>/<controller>/slurm[_<node>]/uid_<UID>/job_<ID>/step_<S>/task_<T>`.

Each controller is its own hierarchy, so a job is the union of its directories in the
controllers Slurm uses: cpuacct (`cpu,cpuacct` when co-mounted, only with
jobacct_gather/cgroup), memory, cpuset, devices, freezer (proctrack/cgroup), pids. With
several slurmd per host (`--enable-multiple-slurmd`, also seen on single-node test
clusters) the top directory is `slurm_<nodename>`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Optional

from clusterwatch.jobs.file_reader import ErrorCounts
from clusterwatch.jobs.layout import (
    CPU_CONTROLLERS,
    PROCS_CONTROLLERS,
    SLURM_JOB_DIR,
    SLURMSTEPD,
    JobCgroup,
    subdirectories,
)

_TOP = re.compile(r"slurm(_.+)?")
_UID = re.compile(r"uid_([0-9]+)")


@dataclass
class _Found:
    uid: int
    jobid: Optional[str]
    name: str
    dirs: dict[str, str] = field(default_factory=dict)
    inodes: dict[str, int] = field(default_factory=dict)


class SlurmV1:
    scheduler = "slurm"

    def discover(self, cgroup_root: str, errors: ErrorCounts) -> list[JobCgroup]:
        found: dict[str, _Found] = {}
        for controller in PROCS_CONTROLLERS:
            hierarchy = os.path.join(cgroup_root, controller)
            for top in subdirectories(hierarchy, errors):
                if not _TOP.fullmatch(top.name):
                    continue
                for user in subdirectories(top.path, errors):
                    uid = _UID.fullmatch(user.name)
                    if uid is None:
                        continue
                    for job in subdirectories(user.path, errors):
                        match = SLURM_JOB_DIR.fullmatch(job.name)
                        if match is None:
                            continue
                        key = f"{top.name}/{user.name}/{job.name}"
                        entry = found.get(key)
                        if entry is None:
                            entry = found[key] = _Found(
                                int(uid.group(1)), match.group("jobid"), job.name)
                        entry.dirs[controller] = job.path
                        entry.inodes[controller] = job.inode()  # from the listing: no stat
        return [_job(key, entry) for key, entry in sorted(found.items())]


def _job(key: str, found: _Found) -> JobCgroup:
    dirs = found.dirs
    procs = next((name for name in PROCS_CONTROLLERS if name in dirs), None)
    procs_dir = dirs[procs] if procs else None
    inode = found.inodes[procs] if procs else 0
    return JobCgroup(
        scheduler="slurm",
        key=key,
        name=found.name,
        inode=inode,
        cgroup_version=1,
        jobid=found.jobid,
        uid=found.uid,
        cpu_dir=next((dirs[name] for name in CPU_CONTROLLERS if name in dirs), None),
        memory_dir=dirs.get("memory"),
        cpuset_dir=dirs.get("cpuset"),
        devices_dir=dirs.get("devices"),
        procs_dir=procs_dir,
        has_steps=True,
        daemon_comm=SLURMSTEPD,
    )
