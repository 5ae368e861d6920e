"""`procfs.job_pids` two ways over the same job directories, collection after collection:
through held directories (`CgroupProcs` over held files: `cgroup.procs` opened relative to
its directory, leaves not listed), and by path with nothing held (a `FileReader` with an
opener: what job_pids read before cgroup_procs), the oracle.

Run as a program, `python -m tests.jobs.pids_both_ways COLLECTIONS JOB_DIR...`, it prints
the JSON of `collect` for each collection: for an exporter run without the capabilities
that bypass file permissions (see exporter_process).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

from clusterwatch.jobs.cgroup_procs import CgroupProcs
from clusterwatch.jobs.file_reader import ErrorCounts, FileReader, read_file
from clusterwatch.jobs.layout import JobCgroup
from clusterwatch.jobs.procfs import job_pids


class BothWays:
    def __init__(self) -> None:
        self.held = CgroupProcs(FileReader(ErrorCounts()))
        self.by_path = CgroupProcs(FileReader(ErrorCounts(), opener=read_file))

    def collect(self, job_dirs: Sequence[str]) -> dict[str, Any]:
        """One collection of every job each way: {"held": ..., "by_path": ...}, each the
        jobs' [pids, steps, complete] and the error counts."""
        return {"held": _collect(self.held, job_dirs),
                "by_path": _collect(self.by_path, job_dirs)}


def _collect(cgroups: CgroupProcs, job_dirs: Sequence[str]) -> dict[str, Any]:
    jobs = [list(job_pids(_job(directory), cgroups)) for directory in job_dirs]
    cgroups.files.end_collection()
    return {"jobs": jobs, "errors": cgroups.files.errors.snapshot()}


def _job(directory: str) -> JobCgroup:
    return JobCgroup(scheduler="slurm", key=directory, name=directory, inode=0,
                     cgroup_version=1, procs_dir=directory, has_steps=True)


def main(argv: Sequence[str]) -> int:
    collections, *job_dirs = argv
    both = BothWays()
    print(json.dumps([both.collect(job_dirs) for _ in range(int(collections))]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
