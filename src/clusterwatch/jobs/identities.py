"""Resolving each job's identity (job ID, uid, account, partition, GPUs) and remembering it.

Read from a job process's environment (`job_identity` parses it) once per job directory and
kept while the directory exists, so it survives the job's processes exiting. Bounded: at
most `TRIES` processes per job are looked at per collection. A job whose ID is in its path
and whose environment says nothing (pam_slurm_adopt sessions, root jobs) is retried only
every `RETRY_S`; a job whose ID depends on it (SLUID, HTCondor) at every collection.
"""

from __future__ import annotations

import os
import time
from typing import Callable, Optional

from clusterwatch.jobs import job_identity
from clusterwatch.jobs.discovery import JobCgroup
from clusterwatch.jobs.job_identity import JobMetadata
from clusterwatch.jobs.procfs import ProcReader

TRIES = 8
RETRY_S = 60.0
Identity = tuple[JobMetadata, Optional[int]]
_Key = tuple[str, int]


class Identities:
    def __init__(self, procs: ProcReader, clock: Callable[[], float] = time.monotonic) -> None:
        self.procs = procs
        self._clock = clock
        self._known: dict[_Key, Identity] = {}
        self._unresolved: dict[_Key, tuple[Identity, float]] = {}

    def resolve(self, job: JobCgroup, pids: list[int]) -> Identity:
        """Metadata and uid. The uid is the path's (Slurm v1), else the real uid of the first
        process not owned by root (root runs slurmstepd and prologs, not the job), else
        SLURM_JOB_UID, else the job directory's owner when not root."""
        key = (job.key, job.inode)
        known = self._known.get(key)
        if known is not None:
            return known
        unresolved = self._unresolved.get(key)
        if unresolved is not None and job.jobid and self._clock() - unresolved[1] < RETRY_S:
            return unresolved[0]
        uid = job.uid
        metadata: Optional[JobMetadata] = None
        for pid in pids[:TRIES]:
            if uid is None:
                uid = self.procs.real_uid(pid) or None
            if metadata is None:
                environ = self.procs.environ(pid, job_identity.ENV_PREFIXES)
                metadata = self._metadata(job, pid, environ) if environ else None
            if uid is not None and metadata is not None:
                break
        if metadata is None:
            identity = (JobMetadata(), uid if uid is not None else _owner(job))
            self._unresolved[key] = (identity, self._clock())
            return identity
        if uid is None:
            uid = metadata.uid if metadata.uid is not None else _owner(job)
        self._known[key] = (metadata, uid)
        self._unresolved.pop(key, None)
        return metadata, uid

    def keep_only(self, present: set[_Key]) -> None:
        """Forget the jobs whose directories are gone."""
        self._known = {k: v for k, v in self._known.items() if k in present}
        self._unresolved = {k: v for k, v in self._unresolved.items() if k in present}

    def _metadata(self, job: JobCgroup, pid: int,
                  environ: dict[str, str]) -> Optional[JobMetadata]:
        if job.scheduler == "slurm":
            if job_identity.SLURM_MARKER not in environ:
                return None
            return job_identity.slurm_metadata(environ)
        if not any(marker in environ for marker in job_identity.CONDOR_MARKERS):
            return None
        metadata = job_identity.condor_metadata(
            environ, lambda path: self.procs.read_in_root(pid, path))
        return metadata if metadata.jobid else None


def _owner(job: JobCgroup) -> Optional[int]:
    try:
        owner = os.stat(job.procs_dir).st_uid if job.procs_dir else 0
    except OSError:
        return None
    return owner or None
