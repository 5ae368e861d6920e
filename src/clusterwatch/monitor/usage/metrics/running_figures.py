"""The figures of every running job at once, for usage_watch: one instant query per rule,
aggregated by the exporter's `jobid` label, never a query per job.

- gpu_idle: each GPU's highest utilisation over the window, by (jobid, instance, gpu_uuid);
- cpu_idle: the CPUs busy on average over the window (the rate of the job's CPU time), by
  jobid, summed over its nodes;
- memory_near_limit: the latest memory the job holds on each node that cannot be reclaimed
  (RSS and shared memory: page cache is dropped before the cgroup kills anything) and the
  cgroup's limit there, two series by (jobid, instance) told apart by a `figure` label, in
  one query joined by `or`.

The queries name the exporter's series only (docs/jobs.md), so no recording rule is needed,
and use PromQL that Prometheus and VictoriaMetrics evaluate alike. Series of jobs that are
not running any more come back too (the window reaches back past their end): the caller
joins the answer with accounting's list of running jobs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Optional

from clusterwatch.http_client import request
from clusterwatch.monitor.usage.metrics.prometheus_api import HttpRequest, query_vector


@dataclass(frozen=True)
class NodeMemory:
    """One node's memory of the job now: what it holds that cannot be reclaimed (RSS and
    shared memory) and the cgroup's limit (None: unlimited, or not read)."""

    used_bytes: Optional[float]
    limit_bytes: Optional[float]


@dataclass(frozen=True)
class RunningFigures:
    """What Prometheus says of one running job (absent: not measured); the rules
    (analysis/running_rules.py) judge it."""

    # gpu (its uuid or index label) -> its highest utilisation, 0 to 1, in the window
    gpu_peak_utilization: Mapping[str, float] = field(default_factory=dict)
    cores_busy: Optional[float] = None  # CPUs busy on average over the window, all nodes
    memory: Mapping[str, NodeMemory] = field(default_factory=dict)  # node -> its memory


MEMORY_USED = "jobs_memory_rss_bytes|jobs_memory_shmem_bytes"


def gpu_query(window_s: int) -> str:
    return (f"max by (jobid, instance, gpu_uuid) "
            f"(max_over_time(jobs_gpu_utilization_ratio[{window_s}s]))")


def cpu_query(window_s: int) -> str:
    return f"sum by (jobid) (rate(jobs_cpu_seconds_total[{window_s}s]))"


def memory_query() -> str:
    return (f'label_replace(sum by (jobid, instance) ({{__name__=~"{MEMORY_USED}"}}), '
            '"figure", "used", "", "") or label_replace(max by (jobid, instance) '
            '(jobs_memory_limit_bytes), "figure", "limit", "", "")')


@dataclass
class _Job:
    gpus: dict[str, float] = field(default_factory=dict)
    cores_busy: Optional[float] = None
    used: dict[str, float] = field(default_factory=dict)
    limit: dict[str, float] = field(default_factory=dict)


def read_running_figures(base_url: str, window_s: int, at: float, timeout_s: float,
                         http: HttpRequest = request) -> Mapping[str, RunningFigures]:
    """`jobid` label -> the job's figures at `at`, from three queries. PrometheusError when
    any of them fails: a run must not judge jobs on part of their figures."""
    jobs: dict[str, _Job] = {}

    def job_of(labels: Mapping[str, str]) -> Optional[_Job]:
        jobid = labels.get("jobid", "")
        return jobs.setdefault(jobid, _Job()) if jobid else None

    for labels, value in query_vector(base_url, gpu_query(window_s), at, timeout_s, http):
        job = job_of(labels)
        if job is not None:
            gpu = f"{labels.get('instance', '')}/{labels.get('gpu_uuid', '')}"
            job.gpus[gpu] = value
    for labels, value in query_vector(base_url, cpu_query(window_s), at, timeout_s, http):
        job = job_of(labels)
        if job is not None:
            job.cores_busy = value
    for labels, value in query_vector(base_url, memory_query(), at, timeout_s, http):
        job = job_of(labels)
        figure = labels.get("figure")
        if job is not None and figure in ("used", "limit"):
            (job.used if figure == "used" else job.limit)[labels.get("instance", "")] = value
    return {jobid: _figures(job) for jobid, job in jobs.items()}


def _figures(job: _Job) -> RunningFigures:
    nodes = sorted(set(job.used) | set(job.limit))
    return RunningFigures(
        gpu_peak_utilization=job.gpus, cores_busy=job.cores_busy,
        memory={node: NodeMemory(job.used.get(node), job.limit.get(node)) for node in nodes})
