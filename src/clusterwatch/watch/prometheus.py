"""GPU VRAM file observations: one Prometheus instant query, validated row by row."""

from __future__ import annotations

import json
import math
import urllib.parse
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any, Optional

from clusterwatch.http_client import TransportError, request
from clusterwatch.watch.vector_scan import scan_vector

MAX_ANSWER_BYTES = 256 * 1024 * 1024
_first, _second = itemgetter(0), itemgetter(1)


def gpu_file_query(job: str) -> str:
    """The spec's query: the file's mtime, only for targets whose last scrape succeeded."""
    return (
        f'node_textfile_mtime_seconds{{job="{job}",file=~"(.*/)?gpu_vram[.]prom"}} '
        f'and on (job, instance) (up{{job="{job}"}} == 1)'
    )


def discovery_query(job: str) -> str:
    """Every instance that has a gpu_vram.prom at all, healthy or not."""
    return f'node_textfile_mtime_seconds{{job="{job}",file=~"(.*/)?gpu_vram[.]prom"}}'


@dataclass(frozen=True)
class GpuObservation:
    """`error` set: the answer as a whole is unusable, every GPU worker is unknown.

    Otherwise `mtimes` maps instance -> file mtime (the sample's value), and `invalid` maps
    instance -> why that worker alone is unknown. An instance in neither is missing.
    """

    mtimes: dict[str, float] = field(default_factory=dict)
    invalid: dict[str, str] = field(default_factory=dict)
    error: Optional[str] = None


def parse_vector(body: bytes) -> GpuObservation:
    """Validate an instant-query answer by the spec's table; any bytes give an observation.

    Prometheus' usual compact answer is scanned without decoding it (vector_scan); any
    other is decoded whole. An answer the decoder cannot hold (nested deeper than the
    interpreter's recursion limit, or too big for memory) is as unusable as one that is not
    JSON.
    """
    scanned = scan_vector(body)
    return _scanned_rows(scanned) if scanned is not None else decode_vector(body)


def decode_vector(body: bytes) -> GpuObservation:
    """`parse_vector` by decoding the answer whole, whatever its shape."""
    try:
        answer = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return GpuObservation(error="the answer is not JSON")
    except RecursionError:
        return GpuObservation(error="the answer is nested too deeply")
    except MemoryError:
        return GpuObservation(error="the answer is too large to decode")
    if not isinstance(answer, dict) or answer.get("status") != "success":
        return GpuObservation(error=f"query status {_short(answer, 'status')}")
    warnings = answer.get("warnings")
    if warnings:
        return GpuObservation(error=f"query warnings: {_short(answer, 'warnings')}")
    data = answer.get("data")
    if not isinstance(data, dict) or data.get("resultType") != "vector":
        return GpuObservation(error="the answer is not an instant vector")
    rows = data.get("result")
    if not isinstance(rows, list):
        return GpuObservation(error="the answer is not an instant vector")
    return _rows(rows)


def _rows(rows: list[Any]) -> GpuObservation:
    values: list[tuple[str, Optional[float]]] = []
    for row in rows:
        metric = row.get("metric") if isinstance(row, dict) else None
        if not isinstance(metric, dict):
            return GpuObservation(error="a row has no label set")
        instance = metric.get("instance")
        if not isinstance(instance, str) or not instance:
            return GpuObservation(error="a row has no instance label")
        values.append((instance, _sample_value(row.get("value"))))
    return _by_instance(values)


def _scanned_rows(rows: list[tuple[str, str]]) -> GpuObservation:
    """The common case, one valid row per instance, in a few calls over all rows; any
    other goes row by row as the decoded answer does."""
    try:
        values = list(map(float, map(_second, rows)))
    except ValueError:
        pass
    else:
        if all(map(math.isfinite, values)):
            mtimes = dict(zip(map(_first, rows), values))
            if len(mtimes) == len(rows):
                return GpuObservation(mtimes=mtimes)
    return _by_instance([(instance, _finite(text)) for instance, text in rows])


def _by_instance(values: list[tuple[str, Optional[float]]]) -> GpuObservation:
    """The rows' mtimes, in answer order; None: the row's value is not a finite number."""
    mtimes: dict[str, float] = {}
    invalid: dict[str, str] = {}
    for instance, value in values:
        if instance in mtimes or instance in invalid:
            mtimes.pop(instance, None)
            invalid[instance] = "two rows for one instance"
            continue
        if value is None:
            invalid[instance] = "the value is not a finite number"
            continue
        mtimes[instance] = value
    return GpuObservation(mtimes=mtimes, invalid=invalid)


def _sample_value(pair: Any) -> Optional[float]:
    # [query_time, "value"]: the first element is when the query ran, not the file's mtime.
    if not isinstance(pair, list) or len(pair) != 2 or not isinstance(pair[1], str):
        return None
    return _finite(pair[1])


def _finite(text: str) -> Optional[float]:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _short(answer: Any, key: str) -> str:
    """A short quote of one field; a nested value is named by its type, never walked."""
    if not isinstance(answer, dict):
        return "missing"
    value = answer.get(key)
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return repr(value)[:200]
    if value is None or isinstance(value, (str, int, float)):
        return repr(value)[:80]
    return f"of type {type(value).__name__}"


def query_gpu_files(
    base_url: str, promql: str, at: float, timeout_s: float
) -> GpuObservation:
    """Run the instant query at time `at`; any failure makes every GPU worker unknown."""
    params = urllib.parse.urlencode({"query": promql, "time": f"{at:.3f}"})
    url = base_url.rstrip("/") + "/api/v1/query"
    try:
        response = request(
            "POST", url, body=params.encode(),
            headers={"Content-Type": "application/x-www-form-urlencoded"},
            timeout=timeout_s, max_body=MAX_ANSWER_BYTES,
        )
    except TransportError as exc:
        return GpuObservation(error=f"request failed ({exc.kind})")
    if response.status != 200:
        return GpuObservation(error=f"answered HTTP {response.status}")
    return parse_vector(response.body)
