"""HTCondor slot cgroups, cgroup v1 and v2.

The starter names each job's cgroup after its execute directory and slot, `/` turned into
`_`: `condor_var_lib_condor_execute_slot1_23@host`, below `htcondor` (BASE_CGROUP) in each
v1 controller, or below `htcondor` in the v2 tree (at the root, in system.slice, or in the
condor service's cgroup). The name carries no job ID: it comes from the job's environment
(the job ad at `_CONDOR_JOB_AD`), see `job_metadata`.
"""

from __future__ import annotations

import os

from clusterwatch.jobs.file_reader import ErrorCounts
from clusterwatch.jobs.layout import CPU_CONTROLLERS, PROCS_CONTROLLERS, JobCgroup, subdirectories

BASE_CGROUP = "htcondor"
_V2_PARENTS = (
    BASE_CGROUP,
    os.path.join("system.slice", BASE_CGROUP),
    os.path.join("system.slice", "condor.service", BASE_CGROUP),
)


def _is_job_dir(name: str) -> bool:
    return name.startswith("condor_")


class HTCondorV1:
    scheduler = "htcondor"

    def discover(self, cgroup_root: str, errors: ErrorCounts) -> list[JobCgroup]:
        found: dict[str, dict[str, str]] = {}
        for controller in PROCS_CONTROLLERS:
            for job in subdirectories(os.path.join(cgroup_root, controller, BASE_CGROUP),
                                      errors):
                if _is_job_dir(job.name):
                    found.setdefault(job.name, {})[controller] = job.path
        jobs = []
        for name, dirs in sorted(found.items()):
            procs_dir = next(dirs[c] for c in PROCS_CONTROLLERS if c in dirs)
            try:
                inode = os.stat(procs_dir).st_ino
            except OSError:
                continue  # removed since the listing: the job ended
            jobs.append(JobCgroup(
                scheduler="htcondor",
                key=os.path.join(BASE_CGROUP, name),
                name=name,
                inode=inode,
                cgroup_version=1,
                cpu_dir=next((dirs[c] for c in CPU_CONTROLLERS if c in dirs), None),
                memory_dir=dirs.get("memory"),
                cpuset_dir=dirs.get("cpuset"),
                devices_dir=dirs.get("devices"),
                procs_dir=procs_dir,
            ))
        return jobs


class HTCondorV2:
    scheduler = "htcondor"

    def discover(self, cgroup_root: str, errors: ErrorCounts) -> list[JobCgroup]:
        jobs = []
        for parent in _V2_PARENTS:
            base = os.path.join(cgroup_root, parent)
            # A v1 host has no cgroup.controllers at the root of its controllers' parent.
            if not os.path.exists(os.path.join(base, "cgroup.controllers")):
                continue
            for job in subdirectories(base, errors):
                if not _is_job_dir(job.name):
                    continue
                jobs.append(JobCgroup(
                    scheduler="htcondor",
                    key=os.path.join(parent, job.name),
                    name=job.name,
                    inode=job.inode(),
                    cgroup_version=2,
                    cpu_dir=job.path,
                    memory_dir=job.path,
                    cpuset_dir=job.path,
                    procs_dir=job.path,
                ))
        return jobs
