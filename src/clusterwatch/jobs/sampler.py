"""One collection: discover the jobs, read each one, keep the state counters need.

Each job is read on its own; an unexpected error in one job is logged, counted
(`job_failed`) and the other jobs are still reported. A job whose processes could not all
be listed (an unreadable `cgroup.procs` or directory below it) keeps its cgroup readings,
but what is summed over its processes is left out: a sum over some of them would be a
wrong value, not a missing one.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Optional

from clusterwatch.jobs import cgroup_parse, discovery, gpus
from clusterwatch.jobs.cgroup_procs import CgroupProcs
from clusterwatch.jobs.cgroup_stats import CgroupStats, read_stats
from clusterwatch.jobs.counters import JobCounters
from clusterwatch.jobs.file_reader import JOB_FAILED, FileReader
from clusterwatch.jobs.identity_cache import Identities
from clusterwatch.jobs.job_metadata import JobMetadata
from clusterwatch.jobs.layout import JobCgroup, JobSource
from clusterwatch.jobs.procfs import IoCounters, ProcReader, job_pids
from clusterwatch.jobs.scratch import ScratchPaths
from clusterwatch.jobs.user_names import UserNames

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class GpuSample:
    name: str  # as the scheduler assigned it: host GPU number or UUID
    uuid: str  # "" when it cannot be resolved
    usage: Optional[gpus.GpuUsage]


@dataclass
class JobSample:
    jobid: str
    user: str
    uid: Optional[int]
    job: JobCgroup
    metadata: JobMetadata
    cgroup: CgroupStats
    steps: Optional[int] = None
    # None: not known for this collection (see the module's docstring).
    processes: Optional[int] = 0
    threads: Optional[int] = 0
    max_process_threads: Optional[int] = 0
    open_files: Optional[int] = 0  # also None when a process's fd/ was unreadable
    process_rss_bytes: Optional[int] = 0
    spawned: Optional[int] = 0
    io: Optional[IoCounters] = None
    uses_scratch: Optional[bool] = None
    gpus: list[GpuSample] = field(default_factory=list)


class JobSampler:
    def __init__(self, cgroup_root: str, proc_root: str, scratch: ScratchPaths,
                 sources: tuple[JobSource, ...], files: FileReader,
                 gpu_inventory: gpus.GpuInventory) -> None:
        self.cgroup_root = cgroup_root
        self.scratch = scratch
        self.sources = sources
        self.files = files
        self.procs = ProcReader(proc_root, files)
        self.cgroup_procs = CgroupProcs(files)
        self.gpu_inventory = gpu_inventory
        self.users = UserNames()
        self._gpus_refreshed = False
        self.identities = Identities(self.procs)
        self._counters: dict[tuple[str, str], JobCounters] = {}

    def sample(self) -> list[JobSample]:
        jobs = discovery.discover(self.cgroup_root, self.sources, self.files.errors)
        self._gpus_refreshed = False
        samples: list[JobSample] = []
        for job in jobs:
            try:
                samples.append(self._sample_job(job))
            except Exception:
                self.files.errors.add(JOB_FAILED)
                log.exception("reading job cgroup %s failed; other jobs are still reported",
                              job.key)
        self.identities.keep_only({(job.key, job.inode) for job in jobs})
        reported = {(s.job.key, s.jobid) for s in samples}
        self._counters = {k: v for k, v in self._counters.items() if k in reported}
        self.procs.end_collection()
        self.files.end_collection()
        return samples

    def _sample_job(self, job: JobCgroup) -> JobSample:
        pids, steps, complete = job_pids(job, self.cgroup_procs)
        processes = self.procs.sample_job(pids, job.daemon_comm)
        metadata, uid = self.identities.resolve(job, [process.pid for process in processes])
        jobid = job.jobid or metadata.jobid or job.name
        sample = JobSample(
            jobid=jobid, user=self.users.name(uid), uid=uid, job=job, metadata=metadata,
            cgroup=read_stats(job, self.files), steps=steps if job.has_steps else None,
        )
        sample.gpus = self._gpus(job, metadata)
        if self.scratch:
            uses = any(self.procs.uses_scratch(process.pid, self.scratch)
                       for process in processes)
            sample.uses_scratch = True if uses else (False if complete else None)
        if not complete:
            # Counters left alone too: the processes not listed would look exited.
            sample.processes = sample.threads = sample.max_process_threads = None
            sample.open_files = sample.process_rss_bytes = sample.spawned = None
            return sample
        readings: Iterable[tuple[tuple[int, int], Optional[IoCounters]]] = ()
        if processes:
            # Columns by zip, summed by builtins: no Python loop over the processes.
            numbers, starttimes, threads, rss_bytes, ios, open_files, _ = zip(*processes)
            sample.threads = sum(threads)
            sample.max_process_threads = max(max(threads), 0)
            sample.open_files = None if None in open_files else sum(open_files)
            sample.process_rss_bytes = sum(rss_bytes)
            readings = zip(zip(numbers, starttimes), ios)
        sample.processes = len(processes)
        counters = self._counters.get((job.key, jobid))
        if counters is None:
            counters = self._counters[(job.key, jobid)] = JobCounters()
        io = counters.update(readings)
        sample.spawned = counters.spawned
        sample.io = io if counters.io_known else None
        return sample

    def _gpus(self, job: JobCgroup, metadata: JobMetadata) -> list[GpuSample]:
        """The job's GPUs: what its devices cgroup lets it open (v1 with ConstrainDevices:
        the kernel's word, and known without any process), else its environment's."""
        names = self._device_cgroup_gpus(job.devices_dir) or metadata.gpus
        if names and not self._gpus_refreshed:
            self.gpu_inventory.refresh()
            self._gpus_refreshed = True
        samples = []
        for name in names:
            uuid = self.gpu_inventory.resolve(name)
            samples.append(GpuSample(name, uuid, self.gpu_inventory.usage(uuid) if uuid else None))
        return samples

    def _device_cgroup_gpus(self, devices_dir: Optional[str]) -> tuple[str, ...]:
        if devices_dir is None:
            return ()
        path = os.path.join(devices_dir, "devices.list")
        try:
            minors = cgroup_parse.parse_device_minors(self.files.cgroup_text(path) or "",
                                                      gpus.NVIDIA_MAJOR)
        except ValueError as exc:
            self.files.malformed(path, exc)
            return ()
        return gpus.device_minors(minors)
