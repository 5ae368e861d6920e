"""The regulation parts of the record's `harvester_db` (telemetry 1.3), typed: each queue's
limit in force as `reporter/harvester_regulation.py` derives it, the workers that started in
the interval, and the job-demand cache's update times.

Records from reporters before 1.3 have none of them: the limit reads as None and the two
parts as absent (None), which a page says as "not reported", never as zero.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any, Optional

from clusterwatch.monitor.record.reading import Counts, counts, error_of, integer, obj, text
from clusterwatch.monitor.record.times import parse_utc


@dataclass(frozen=True)
class LimitInForce:
    """The queued-worker limit harvester's `get_worker_limits` gives the adjuster: `value`
    (None when a ratio applies and the running workers were not counted), `at_most` (known
    regardless), the running workers it used and how it was derived; or why there is none."""

    error: Optional[str] = None
    value: Optional[int] = None
    at_most: Optional[int] = None
    running_workers: Optional[int] = None
    derivation: Optional[str] = None


@dataclass(frozen=True)
class WorkerStarts:
    started: Optional[int] = None
    by_status: Counts = ()  # the started workers by their status when the record was made


@dataclass(frozen=True)
class CacheKey:
    """One `cache_table` key: when the cacher last stored it and how old that was."""

    subKey: Optional[str] = None
    lastUpdate: Optional[dt.datetime] = None
    age_s: Optional[int] = None  # negative: dated after the record was collected


def limit_in_force(value: Any) -> Optional[LimitInForce]:
    if not isinstance(value, dict):
        return None
    return LimitInForce(error_of(value), integer(value.get("value")),
                        integer(value.get("at_most")), integer(value.get("running_workers")),
                        text(value.get("derivation")))


def worker_starts(entry: Any) -> WorkerStarts:
    found = obj(entry)
    return WorkerStarts(integer(found.get("started")), counts(found.get("by_status")))


def status_counts_as_starts(entry: Any) -> WorkerStarts:
    """A remote record built before `worker_starts` (`workers_started`: `{status: n}` per
    site) read as the same starts."""
    by_status = counts(entry)
    return WorkerStarts(sum(n for _, n in by_status), by_status)


def cache_key(entry: Any) -> CacheKey:
    found = obj(entry)
    return CacheKey(text(found.get("subKey")), parse_utc(found.get("lastUpdate")),
                    integer(found.get("age_s")))
