"""The JSON document of `GET /api/v1/jobs/<jobid>/usage` and `clusterwatch monitor job_usage`.

Built from a JobRecord, its UsageSummary and warnings; plain JSON types only. A figure that
was not measured is null, never 0. Fractions stay fractions (0-1); sizes are bytes; times are
ISO 8601 in UTC. The top-level keys of USAGE_KEYS are an interface: scripts rely on them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any, Optional, TypedDict

from clusterwatch.monitor.usage.accounting.interface import JobRecord
from clusterwatch.monitor.usage.analysis.figures import EXPORTER, UsageSummary
from clusterwatch.monitor.usage.analysis.rules import UsageWarning


class WarningDocument(TypedDict):
    code: str
    message: str
    advice: str
    figures: dict[str, Any]


class NodePart(TypedDict):
    node: str  # the exporter's instance on that node, e.g. "node01:9306"
    cpu_used_s: Optional[float]
    cores_used_mean: Optional[float]
    memory_peak_bytes: Optional[int]
    gpus: list[dict[str, Any]]


class UsageDocument(TypedDict):
    jobid: str
    # The job's own number (130 for array task 123_4): the exporter's `jobid` label, by which
    # the plots of a kept job are read again. Absent from summaries kept before it was added.
    jobid_raw: str
    name: str  # the job's name as submitted: user-written text, escaped wherever shown
    user: str
    account: str
    partition: str
    state: str
    running: bool
    start: Optional[str]
    end: Optional[str]
    elapsed_s: int
    time_limit_s: Optional[int]
    nodes: int
    cpus_allocated: int
    cpu_used_s: Optional[float]
    cpu_user_s: Optional[float]
    cpu_system_s: Optional[float]
    cpu_source: Optional[str]
    cpu_efficiency: Optional[float]
    memory_requested_bytes: Optional[int]
    memory_peak_bytes: Optional[int]
    memory_source: Optional[str]
    memory_efficiency: Optional[float]
    memory: dict[str, Optional[int]]
    gpus_allocated: int
    gpus: list[dict[str, Any]]
    # Each node's part (NodePart), by node; empty when not measured. Absent from summaries
    # kept before it was added.
    per_node: list[NodePart]
    samples: int
    measured: bool
    notes: list[str]
    warnings: list[WarningDocument]


USAGE_KEYS = tuple(UsageDocument.__annotations__)
# Keys added after documents were first kept: a kept document may lack them.
ADDED_KEYS = frozenset({"jobid_raw", "per_node"})
_TYPES: dict[str, type] = {"jobid": str, "user": str, "account": str, "memory": dict,
                           "gpus": list, "notes": list, "warnings": list}


def kept_document(value: object) -> Optional[UsageDocument]:
    """`value` when it has the document's shape (every key, those read as containers and
    names of the right type, each warning whole, every number one a double holds); None for
    a damaged or older one, which the caller reports again instead of failing on it."""
    if not isinstance(value, dict) or not set(USAGE_KEYS) - ADDED_KEYS <= set(value):
        return None
    if not all(isinstance(value[key], kind) for key, kind in _TYPES.items()):
        return None
    if not all(isinstance(w, dict) and {"code", "message", "advice", "figures"} <= set(w)
               for w in value["warnings"]):
        return None
    if not _doubles_only(value):  # kept before impossible readings were refused (readings.py)
        return None
    document: UsageDocument = value  # type: ignore[assignment]
    return document


def _doubles_only(value: object) -> bool:
    """Every number in `value` one that a JSON reader's double holds: a 310-digit integer
    becomes Infinity there, or an error."""
    if isinstance(value, dict):
        return all(_doubles_only(item) for item in value.values())
    if isinstance(value, list):
        return all(_doubles_only(item) for item in value)
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, int):
        try:
            return math.isfinite(float(value))
        except OverflowError:
            return False
    return True


def usage_document(job: JobRecord, summary: UsageSummary,
                   warnings: Sequence[UsageWarning]) -> UsageDocument:
    return {
        "jobid": job.jobid,
        "jobid_raw": job.jobid_raw or job.jobid,
        "name": job.name,
        "user": job.user,
        "account": job.account,
        "partition": job.partition,
        "state": job.state,
        "running": summary.running,
        "start": _time(job.start),
        "end": _time(job.end),
        "elapsed_s": job.elapsed_s,
        "time_limit_s": job.time_limit_s,
        "nodes": job.nodes,
        "cpus_allocated": job.cpus_allocated,
        "cpu_used_s": summary.cpu_used_s,
        "cpu_user_s": summary.cpu_user_s,
        "cpu_system_s": summary.cpu_system_s,
        "cpu_source": summary.cpu_source,
        "cpu_efficiency": summary.cpu_efficiency,
        "memory_requested_bytes": summary.memory_requested_bytes,
        "memory_peak_bytes": summary.memory_peak_bytes,
        "memory_source": summary.memory_source,
        "memory_efficiency": summary.memory_efficiency,
        # The kinds of "memory" a user meets, side by side (docs/usage.md explains each).
        "memory": {
            "rss_and_shmem_peak_bytes": summary.memory_peak_bytes
            if summary.memory_source == EXPORTER else None,
            "page_cache_peak_bytes": summary.memory_cache_peak_bytes,
            "cgroup_peak_bytes": summary.memory_cgroup_peak_bytes,
            "accounting_max_rss_bytes": summary.memory_accounting_max_rss_bytes,
        },
        "gpus_allocated": summary.gpus_allocated,
        "gpus": [{"gpu": g.gpu, "mean_utilization": g.mean_utilization} for g in summary.gpus],
        "per_node": [{"node": n.node, "cpu_used_s": n.cpu_used_s,
                      "cores_used_mean": n.cores_used_mean,
                      "memory_peak_bytes": n.memory_peak_bytes,
                      "gpus": [{"gpu": g.gpu, "mean_utilization": g.mean_utilization}
                               for g in n.gpus]} for n in summary.per_node],
        "samples": summary.samples,
        "measured": summary.measured,
        "notes": list(summary.notes),
        "warnings": [{"code": w.code, "message": w.message, "advice": w.advice,
                      "figures": dict(w.figures)} for w in warnings],
    }


def _time(moment: Optional[datetime]) -> Optional[str]:
    if moment is None:
        return None
    return moment.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")
