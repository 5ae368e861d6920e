"""Which jobs run on this node, found from cgroup directories, never from PIDs.

Starting from directories keeps a job that holds CPUs or GPUs with no running process
visible. Each scheduler layout is one module with a `JobSource` (see `layout`, which holds
what the layouts share); supporting another scheduler or layout is one new module added to
`SOURCES`.

A directory that cannot be listed (an exporter without CAP_DAC_READ_SEARCH, a uid
directory of mode 000) is counted and skipped; the rest of the tree is still searched.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from clusterwatch.jobs.file_reader import ErrorCounts
from clusterwatch.jobs.htcondor import HTCondorV1, HTCondorV2
from clusterwatch.jobs.layout import JobCgroup, JobSource
from clusterwatch.jobs.slurm_v1 import SlurmV1
from clusterwatch.jobs.slurm_v2 import SlurmV2

log = logging.getLogger(__name__)

SCHEDULERS = ("auto", "slurm", "htcondor")
# Every layout `auto` tries, in this order (an absent one costs a stat). The sources keep no
# state, so one instance of each serves every collector.
SOURCES: tuple[JobSource, ...] = (SlurmV1(), SlurmV2(), HTCondorV1(), HTCondorV2())


def sources_for(scheduler: str) -> tuple[JobSource, ...]:
    """The sources `--scheduler` selects; `auto` tries every layout."""
    if scheduler == "auto":
        return SOURCES
    if scheduler not in SCHEDULERS:
        raise ValueError(f"unknown scheduler {scheduler!r}; expected one of {SCHEDULERS}")
    return tuple(source for source in SOURCES if source.scheduler == scheduler)


def discover(cgroup_root: str, sources: Sequence[JobSource],
             errors: ErrorCounts) -> list[JobCgroup]:
    """Every job of every source; a source that fails anyway is logged and skipped."""
    jobs: list[JobCgroup] = []
    for source in sources:
        try:
            jobs.extend(source.discover(cgroup_root, errors))
        except OSError as exc:
            log.warning("%s: cannot list job cgroups under %s: %s",
                        type(source).__name__, cgroup_root, exc)
    return jobs
