"""Job samples -> Prometheus metric families. The names and labels are an API (docs/jobs.md).

Base units, `_total` on counters (prometheus_client appends it to counter families). Every
family is yielded, also without samples, so its HELP and TYPE stay visible. A reading a job
lacks (a layout without it, an unreadable file) leaves that job's series out.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Callable, Optional

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from clusterwatch.jobs.sampler import JobSample

LABELS = ["jobid", "user"]
Value = Callable[[JobSample], Optional[float]]


@dataclass(frozen=True)
class _Family:
    name: str
    counter: bool
    help: str
    value: Value


def _io(field: str) -> Value:
    return lambda s: None if s.io is None else getattr(s.io, field)


def _flag(value: Optional[bool]) -> Optional[float]:
    return None if value is None else float(value)


FAMILIES = (
    _Family("jobs_cpu_seconds", True,
            "CPU time of the job's cgroup (all steps and tasks, children included).",
            lambda s: s.cgroup.cpu_seconds),
    _Family("jobs_cpu_user_seconds", True, "CPU time of the job in user mode.",
            lambda s: s.cgroup.cpu_user_seconds),
    _Family("jobs_cpu_system_seconds", True, "CPU time of the job in kernel mode.",
            lambda s: s.cgroup.cpu_system_seconds),
    _Family("jobs_cpus", False, "CPUs allocated to the job (its cpuset).",
            lambda s: None if s.cgroup.cpus is None else len(s.cgroup.cpus)),
    _Family("jobs_memory_rss_bytes", False,
            "Anonymous memory plus swap cache of the job's cgroup (v1 total_rss, v2 "
            "anon+swapcached); page cache and shmem are separate series.",
            lambda s: s.cgroup.memory_rss_bytes),
    _Family("jobs_memory_cache_bytes", False,
            "Page cache charged to the job (v1 total_cache, v2 file); includes shmem.",
            lambda s: s.cgroup.memory_cache_bytes),
    _Family("jobs_memory_shmem_bytes", False,
            "Shared memory (tmpfs, /dev/shm) charged to the job; part of the cache.",
            lambda s: s.cgroup.memory_shmem_bytes),
    _Family("jobs_memory_usage_bytes", False,
            "Memory the limit is enforced against (v1 usage_in_bytes, v2 memory.current).",
            lambda s: s.cgroup.memory_usage_bytes),
    _Family("jobs_memory_max_usage_bytes", False,
            "Highest memory usage of the job (v1 max_usage_in_bytes, v2 memory.peak; absent "
            "on kernels without memory.peak).",
            lambda s: s.cgroup.memory_max_usage_bytes),
    _Family("jobs_memory_limit_bytes", False, "Memory limit of the job; absent when unlimited.",
            lambda s: s.cgroup.memory_limit_bytes),
    _Family("jobs_memory_failcnt", True,
            "Times the job's memory usage hit its limit (v1 memory.failcnt, v2 memory.events "
            "max).", lambda s: s.cgroup.memory_failcnt),
    _Family("jobs_memory_oom_kills", True, "Processes of the job killed by the OOM killer.",
            lambda s: s.cgroup.memory_oom_kills),
    _Family("jobs_memory_process_rss_bytes", False,
            "Sum of the RSS in /proc of the job's processes (shared pages counted once per "
            "process); for comparison with jobs_memory_rss_bytes.",
            lambda s: s.process_rss_bytes),
    _Family("jobs_processes", False, "Processes in the job's cgroups now.",
            lambda s: s.processes),
    _Family("jobs_threads", False, "Threads of the job's processes now.", lambda s: s.threads),
    _Family("jobs_process_threads_max", False,
            "Threads of the job's process with the most threads.",
            lambda s: s.max_process_threads),
    _Family("jobs_open_files", False,
            "Open file descriptors of the job's processes (files, sockets, pipes).",
            lambda s: s.open_files),
    _Family("jobs_spawned_processes", True,
            "Distinct processes (PID and start time) seen in the job by this exporter.",
            lambda s: s.spawned),
    _Family("jobs_read_bytes", True,
            "Bytes the job's processes caused to be read from storage (/proc/<pid>/io "
            "read_bytes), exited processes included.", _io("read_bytes")),
    _Family("jobs_write_bytes", True,
            "Bytes the job's processes caused to be written to storage (/proc/<pid>/io "
            "write_bytes), exited processes included.", _io("write_bytes")),
    _Family("jobs_read_operations", True, "read() calls of the job's processes (syscr).",
            _io("read_operations")),
    _Family("jobs_write_operations", True, "write() calls of the job's processes (syscw).",
            _io("write_operations")),
    _Family("jobs_uses_scratch", False,
            "1 when a process of the job has its working directory or an open file under a "
            "configured scratch path, else 0; absent when no scratch path is configured.",
            lambda s: _flag(s.uses_scratch)),
    _Family("jobs_steps", False, "Slurm steps of the job (batch, extern, srun steps).",
            lambda s: s.steps),
    _Family("jobs_gpus", False, "GPUs assigned to the job.", lambda s: len(s.gpus)),
)


CORE_FAMILY = "jobs_cpu_core_seconds"
CORE_HELP = ("CPU time of the job on each of its allocated CPUs (cgroup v1 cpuacct.usage_percpu; "
             "cgroup v2 has no per-CPU usage).")
CORE_LABELS = [*LABELS, "core"]
GPU_INFO_FAMILY = "jobs_gpu_info"
GPU_INFO_HELP = ("A GPU assigned to the job: gpu as the scheduler names it, gpu_uuid the "
                 "device's UUID (empty when it cannot be resolved).")
GPU_INFO_LABELS = [*LABELS, "gpu", "gpu_uuid"]
GPU_UTILIZATION_FAMILY = "jobs_gpu_utilization_ratio"
GPU_UTILIZATION_HELP = ("Fraction of the last sample period the GPU was busy (NVML), 0 to 1.")
GPU_MEMORY_FAMILY = "jobs_gpu_memory_used_bytes"
GPU_MEMORY_HELP = "Memory in use on the GPU (NVML)."
GPU_LABELS = [*LABELS, "gpu_uuid"]
INFO_FAMILY = "jobs_info"
INFO_HELP = ("Job metadata, value 1: uid, account, partition, scheduler, and cgroup (the job "
             "directory under the cgroup root).")
INFO_LABELS = [*LABELS, "uid", "account", "partition", "scheduler", "cgroup"]


def info_values(sample: JobSample) -> list[str]:
    """The values of INFO_LABELS for one job."""
    return [sample.jobid, sample.user, "" if sample.uid is None else str(sample.uid),
            sample.metadata.account, sample.metadata.partition, sample.job.scheduler,
            sample.job.key]


def job_families(samples: Sequence[JobSample]) -> Iterator[Metric]:
    """prometheus_client families of the jobs (the Collector API, Pushgateway mode); the
    served text is formatted from the samples directly (`exposition`), identically."""
    for spec in FAMILIES:
        family_type = CounterMetricFamily if spec.counter else GaugeMetricFamily
        family = family_type(spec.name, spec.help, labels=LABELS)
        for sample in samples:
            value = spec.value(sample)
            if value is not None:
                family.add_metric([sample.jobid, sample.user], value)
        yield family
    yield from _per_core(samples)
    yield from _gpu_families(samples)
    yield _info(samples)


def _per_core(samples: Sequence[JobSample]) -> Iterator[Metric]:
    family = CounterMetricFamily(CORE_FAMILY, CORE_HELP, labels=CORE_LABELS)
    for sample in samples:
        for core, seconds in sorted(sample.cgroup.core_seconds.items()):
            family.add_metric([sample.jobid, sample.user, str(core)], seconds)
    yield family


def _gpu_families(samples: Sequence[JobSample]) -> Iterator[Metric]:
    info = GaugeMetricFamily(GPU_INFO_FAMILY, GPU_INFO_HELP, labels=GPU_INFO_LABELS)
    utilization = GaugeMetricFamily(GPU_UTILIZATION_FAMILY, GPU_UTILIZATION_HELP,
                                    labels=GPU_LABELS)
    memory = GaugeMetricFamily(GPU_MEMORY_FAMILY, GPU_MEMORY_HELP, labels=GPU_LABELS)
    for sample in samples:
        for gpu in sample.gpus:
            info.add_metric([sample.jobid, sample.user, gpu.name, gpu.uuid], 1)
            if gpu.usage is None:
                continue
            if gpu.usage.utilization_ratio is not None:
                utilization.add_metric([sample.jobid, sample.user, gpu.uuid],
                                       gpu.usage.utilization_ratio)
            if gpu.usage.memory_used_bytes is not None:
                memory.add_metric([sample.jobid, sample.user, gpu.uuid],
                                  gpu.usage.memory_used_bytes)
    yield from (info, utilization, memory)


def _info(samples: Sequence[JobSample]) -> Metric:
    family = GaugeMetricFamily(INFO_FAMILY, INFO_HELP, labels=INFO_LABELS)
    for sample in samples:
        family.add_metric(info_values(sample), 1)
    return family
