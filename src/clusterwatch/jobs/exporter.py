"""`JobsCollector`: a prometheus_client collector computing per-job metrics at scrape time.

Register it in its own CollectorRegistry. It keeps state between collections (I/O totals of
departed processes, processes seen, job identities), so reuse one instance for every scrape.
Every series carries `jobid` and `user`; other metadata goes to `jobs_info`.

Scrapes that arrive while a collection runs wait for it and share its result (single
flight) instead of queueing a collection each: however many scrapers a node has, at most
one collection runs, and a burst of scrapes costs one.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Optional, Union

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from clusterwatch.jobs import discovery, exposition, gpus
from clusterwatch.jobs.file_reader import (
    DUPLICATE_JOB,
    ErrorCounts,
    FileReader,
    HeldFiles,
    Opener,
)
from clusterwatch.jobs.metric_families import job_families
from clusterwatch.jobs.sampler import JobSample, JobSampler
from clusterwatch.jobs.scratch import ScratchPaths

log = logging.getLogger(__name__)

StrPath = Union[str, "os.PathLike[str]"]


class JobsCollector(Collector):
    def __init__(
        self,
        cgroup_root: StrPath = "/sys/fs/cgroup",
        proc_root: StrPath = "/proc",
        scratch_paths: Iterable[str] = (),
        scheduler: str = "auto",
        *,
        nvml: gpus.NvmlOption = gpus.AUTO,
        opener: Optional[Opener] = None,
        held_files: Optional[int] = None,
    ) -> None:
        """`opener` replaces every file read (tests); `held_files` caps the files kept open
        between collections (default: file_reader.HELD_FILES_MAX, within the open-files
        limit; 0 holds none)."""
        self.errors = ErrorCounts()
        held = None if opener is not None else HeldFiles(held_files)
        files = FileReader(self.errors, opener, held=held)
        self._sampler = JobSampler(
            cgroup_root=os.fspath(cgroup_root),
            proc_root=os.fspath(proc_root).rstrip("/") or "/",
            scratch=ScratchPaths(scratch_paths),
            sources=discovery.sources_for(scheduler),
            files=files,
            gpu_inventory=gpus.GpuInventory(os.fspath(proc_root), files, nvml),
        )
        self._flight_lock = threading.Lock()
        self._flight: Optional[_Flight] = None  # the collection running now, if any

    def describe(self) -> Iterator[Metric]:
        """The families without samples, without collecting: prometheus_client learns the
        names from them, which its `name[]` filters (served by its registry) need."""
        yield from job_families([])
        yield from self._own_families(0, 0.0)

    def collect(self) -> Iterator[Metric]:
        samples, own = self.collect_samples()
        yield from job_families(samples)
        yield from own

    def exposition(self, fmt: str = exposition.TEXT) -> bytes:
        """One collection in the text exposition format (`exposition.TEXT` or
        `exposition.OPENMETRICS`): what `generate_latest` writes for a registry holding this
        collector, without building prometheus_client's families."""
        samples, own = self.collect_samples()
        return exposition.render(samples, own, fmt)

    def collect_samples(self) -> tuple[list[JobSample], list[Metric]]:
        """One collection: the jobs' samples (one per job ID) and the exporter's own families;
        the result of the collection running now when there is one (see the module's
        docstring). The result is shared: read it, never change it."""
        with self._flight_lock:
            flight = self._flight
            leading = flight is None
            if flight is None:
                flight = self._flight = _Flight()
        if not leading:
            return flight.wait()
        try:
            flight.result = self._collect_now()
        except BaseException as exc:
            flight.error = exc
            raise
        finally:
            with self._flight_lock:
                self._flight = None
            flight.done.set()
        return flight.result

    def _collect_now(self) -> tuple[list[JobSample], list[Metric]]:
        started = time.monotonic()
        samples = self._unique(self._sampler.sample())
        duration = time.monotonic() - started
        return samples, self._own_families(len(samples), duration)

    def _unique(self, samples: Sequence[JobSample]) -> list[JobSample]:
        # Two cgroups with one job ID (a job on two slurmd of one host) would make duplicate
        # series, which Prometheus rejects for the whole scrape: keep the first.
        seen: set[str] = set()
        unique = []
        for sample in samples:
            if sample.jobid in seen:
                self.errors.add(DUPLICATE_JOB)
                log.warning("job %s found twice (also in %s); only the first is reported",
                            sample.jobid, sample.job.key)
                continue
            seen.add(sample.jobid)
            unique.append(sample)
        return unique

    def _own_families(self, jobs: int, duration: float) -> list[Metric]:
        duration_family = GaugeMetricFamily(
            "jobs_exporter_collect_duration_seconds",
            "Time this collection took to read every job's cgroups and processes.",
            value=duration)
        jobs_family = GaugeMetricFamily(
            "jobs_exporter_jobs", "Jobs found on this node in this collection.", value=jobs)
        errors_family = CounterMetricFamily(
            "jobs_exporter_errors", "Failed reads since the exporter started, by kind "
            "(process_vanished, permission_denied, unreadable, malformed, job_failed, gpu, "
            "duplicate_job); none of them fails a collection.", labels=["kind"])
        for kind, count in sorted(self.errors.snapshot().items()):
            errors_family.add_metric([kind], count)
        return [duration_family, jobs_family, errors_family]


class _Flight:
    """One collection in progress, awaited by the scrapes that arrived during it."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.result: tuple[list[JobSample], list[Metric]] = ([], [])
        self.error: Optional[BaseException] = None

    def wait(self) -> tuple[list[JobSample], list[Metric]]:
        self.done.wait()
        if self.error is not None:
            raise RuntimeError("the shared collection failed") from self.error
        return self.result
