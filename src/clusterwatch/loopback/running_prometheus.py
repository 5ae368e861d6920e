"""A loopback Prometheus for usage_watch: it answers the three per-rule instant queries
(usage/metrics/running_figures.py) from a table of each job's figures, as Prometheus would
evaluate them over the exporter's series, and records every query it gets.

Recognised by the series each names: `jobs_gpu_utilization_ratio` (each GPU's peak, by
jobid, instance, gpu_uuid), `jobs_cpu_seconds_total` (CPUs busy, by jobid), and
`jobs_memory_limit_bytes` (memory used and limit by jobid and instance, told apart by the
`figure` label). Any other query is a 400, as Prometheus answers a query it cannot parse.
Values are written as Prometheus writes them ("NaN", "+Inf" included).
"""

from __future__ import annotations

import json
import math
import threading
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Optional

from clusterwatch.loopback.http_recorder import (
    LoopbackHTTPServer,
    RecordedRequest,
    ScriptedResponse,
)

_JSON = {"Content-Type": "application/json"}


@dataclass
class JobFigures:
    gpus: dict[tuple[str, str], float] = field(default_factory=dict)  # (node, uuid) -> peak
    cores_busy: Optional[float] = None
    memory: dict[str, tuple[Optional[float], Optional[float]]] = field(default_factory=dict)


class RunningPrometheus(LoopbackHTTPServer):
    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._jobs: dict[str, JobFigures] = {}
        self._bodies: dict[str, bytes] = {}
        self._failure: Optional[ScriptedResponse] = None
        self.queries: list[str] = []

    def __enter__(self) -> RunningPrometheus:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    def job(self, jobid: str, *, gpus: Optional[Mapping[str, float]] = None,
            cores_busy: Optional[float] = None,
            memory: Optional[Mapping[str, tuple[Optional[float], Optional[float]]]] = None,
            node: str = "node01") -> None:
        """What Prometheus has of the job: each GPU's peak utilisation (uuid -> 0..1, on
        `node`), CPUs busy, and per node (memory used, limit); None: that series absent."""
        with self._lock:
            self._jobs[jobid] = JobFigures(
                {(node, uuid): peak for uuid, peak in (gpus or {}).items()}, cores_busy,
                dict(memory or {}))
            self._bodies.clear()

    def fail_with(self, status: int, body: bytes = b"{}") -> None:
        with self._lock:
            self._failure = ScriptedResponse(status, body, _JSON)

    def respond(self, request: RecordedRequest) -> ScriptedResponse:
        params = dict(urllib.parse.parse_qsl(request.body.decode()))
        query = params.get("query", "")
        with self._lock:
            self.queries.append(query)
            if self._failure is not None:
                return self._failure
            kind = _kind(query)
            if request.route != "/api/v1/query" or kind is None:
                return ScriptedResponse(400, json.dumps({
                    "status": "error", "errorType": "bad_data",
                    "error": "not a query of usage_watch"}).encode(), _JSON)
            body = self._bodies.get(kind)
            if body is None:
                body = self._bodies[kind] = self._answer(kind, float(params.get("time", 0)))
            return ScriptedResponse(200, body, _JSON)

    def _answer(self, kind: str, at: float) -> bytes:
        rows: list[dict[str, object]] = []
        for jobid, job in self._jobs.items():
            if kind == "gpu":
                rows += [_row({"jobid": jobid, "instance": node, "gpu_uuid": uuid}, at, peak)
                         for (node, uuid), peak in job.gpus.items()]
            elif kind == "cpu" and job.cores_busy is not None:
                rows.append(_row({"jobid": jobid}, at, job.cores_busy))
            elif kind == "memory":
                for node, (used, limit) in job.memory.items():
                    for figure, value in (("used", used), ("limit", limit)):
                        if value is not None:
                            rows.append(_row({"jobid": jobid, "instance": node,
                                              "figure": figure}, at, value))
        return json.dumps({"status": "success",
                           "data": {"resultType": "vector", "result": rows}}).encode()


def _kind(query: str) -> Optional[str]:
    for name, kind in (("jobs_gpu_utilization_ratio", "gpu"), ("jobs_cpu_seconds_total", "cpu"),
                       ("jobs_memory_limit_bytes", "memory")):
        if name in query:
            return kind
    return None


def _row(labels: Mapping[str, str], at: float, value: float) -> dict[str, object]:
    return {"metric": dict(labels), "value": [at, _text(value)]}


def _text(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))
