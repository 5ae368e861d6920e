"""Resolving each job's identity (job ID, uid, account, partition, GPUs) and remembering it.

Read from a job process's environment (`job_metadata` parses it) once per job directory and
kept while the directory exists, so it survives the job's processes exiting. Bounded: at
most `TRIES` processes per job are looked at per collection. A job whose environment says
nothing (pam_slurm_adopt sessions, root jobs, a SLUID job before its tasks start) is
remembered as unresolved with the processes already looked at: a later collection looks
only at processes it has not looked at yet, and at all of them again after `RETRY_S` (a
process that runs another program gets that program's environment). A job whose processes
do not change therefore costs no read at all between retries.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Callable, Optional

from clusterwatch.jobs import job_metadata
from clusterwatch.jobs.job_metadata import JobMetadata
from clusterwatch.jobs.layout import JobCgroup
from clusterwatch.jobs.procfs import ProcReader

TRIES = 8
RETRY_S = 60.0
Identity = tuple[JobMetadata, Optional[int]]
_Key = tuple[str, int]


@dataclass
class _Unresolved:
    identity: Identity
    looked_at: frozenset[int]  # PIDs whose environment said nothing
    since: float  # when every process was last looked at


class Identities:
    def __init__(self, procs: ProcReader, clock: Callable[[], float] = time.monotonic) -> None:
        self.procs = procs
        self._clock = clock
        self._known: dict[_Key, Identity] = {}
        self._unresolved: dict[_Key, _Unresolved] = {}

    def resolve(self, job: JobCgroup, pids: list[int]) -> Identity:
        """Metadata and uid. The uid is the path's (Slurm v1), else the real uid of the first
        process not owned by root (root runs slurmstepd and prologs, not the job), else
        SLURM_JOB_UID, else the job directory's owner when not root."""
        key = (job.key, job.inode)
        known = self._known.get(key)
        if known is not None:
            return known
        now = self._clock()
        unresolved = self._unresolved.get(key)
        looked_at: frozenset[int] = frozenset()
        since = now
        if unresolved is not None and now - unresolved.since < RETRY_S:
            since = unresolved.since
            # Forget the PIDs that are gone (a job that churns processes stays bounded).
            looked_at = unresolved.looked_at.intersection(pids)
            pids = [pid for pid in pids if pid not in looked_at]
            if not pids:
                unresolved.looked_at = looked_at
                return unresolved.identity  # the same processes: nothing new to learn
        uid = job.uid
        metadata: Optional[JobMetadata] = None
        tried: list[int] = []
        for pid in pids[:TRIES]:
            tried.append(pid)
            if uid is None:
                uid = self.procs.real_uid(pid) or None
            if metadata is None:
                environ = self.procs.environ(pid, job_metadata.ENV_PREFIXES)
                metadata = self._metadata(job, pid, environ) if environ else None
            if uid is not None and metadata is not None:
                break
        if metadata is None:
            if uid is None and unresolved is not None:
                uid = unresolved.identity[1]
            identity = (JobMetadata(), uid if uid is not None else _owner(job))
            self._unresolved[key] = _Unresolved(identity, looked_at.union(tried), since)
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
            if job_metadata.SLURM_MARKER not in environ:
                return None
            return job_metadata.slurm_metadata(environ)
        if not any(marker in environ for marker in job_metadata.CONDOR_MARKERS):
            return None
        metadata = job_metadata.condor_metadata(
            environ, lambda path: self.procs.read_in_root(pid, path))
        return metadata if metadata.jobid else None


def _owner(job: JobCgroup) -> Optional[int]:
    try:
        owner = os.stat(job.procs_dir).st_uid if job.procs_dir else 0
    except OSError:
        return None
    return owner or None
