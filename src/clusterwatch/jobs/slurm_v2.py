"""Slurm on cgroup v2: `<root>/system.slice/slurmstepd.scope/job_<ID>/step_<S>/...`.

With several slurmd per host the scope is `<nodename>_slurmstepd.scope`; a slurmd outside
systemd may put it directly under the root. Since Slurm 26.05 the job directory may be
named by the job's SLUID (`s` + 13 base32 characters) instead of `job_<ID>`: the job ID then
comes from the job's processes (SLURM_JOB_ID in their environment). The path carries no uid.

Inside a step, `slurm/` holds slurmstepd itself (root) and `user/task_<T>` the job's tasks;
`<scope>/system` holds slurmstepd's idle process and is not a job.
"""

from __future__ import annotations

import os
import re

from clusterwatch.jobs.file_reader import ErrorCounts
from clusterwatch.jobs.layout import SLURM_JOB_DIR, SLURMSTEPD, JobCgroup, subdirectories

_SCOPE = re.compile(r"(?:.+_)?slurmstepd\.scope")
_SCOPE_PARENTS = ("system.slice", "")


class SlurmV2:
    scheduler = "slurm"

    def discover(self, cgroup_root: str, errors: ErrorCounts) -> list[JobCgroup]:
        jobs: list[JobCgroup] = []
        for parent in _SCOPE_PARENTS:
            for scope in subdirectories(os.path.join(cgroup_root, parent), errors):
                if not _SCOPE.fullmatch(scope.name):
                    continue
                for job in subdirectories(scope.path, errors):
                    match = SLURM_JOB_DIR.fullmatch(job.name)
                    if match is None:
                        continue
                    jobs.append(JobCgroup(
                        scheduler="slurm",
                        key=os.path.join(parent, scope.name, job.name),
                        name=job.name,
                        inode=job.inode(),
                        cgroup_version=2,
                        jobid=match.group("jobid"),
                        cpu_dir=job.path,
                        memory_dir=job.path,
                        cpuset_dir=job.path,
                        procs_dir=job.path,
                        daemon_dirs=("slurm",),
                        has_steps=True,
                        daemon_comm=SLURMSTEPD,
                    ))
        return jobs
