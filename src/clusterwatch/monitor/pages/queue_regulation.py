"""What regulates one queue's workers, as the harvester's host reported it (telemetry 1.3),
shown on the queue page beside the worker adjuster's applied limit: the worker-limit fields of
the queue configuration with the limit in force and its derivation, the workers that started
in the record's interval, and how old the job-demand cache the adjuster reads was.

A record from a reporter before 1.3 carries none of it: each is then said to be not reported,
never shown as zero. `regulation_rows` makes the markup (a queue_rows filter).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Optional

from django.utils.safestring import SafeString

from clusterwatch.monitor.core.humanize import duration_text
from clusterwatch.monitor.core.stamps import Stamp, stamp
from clusterwatch.monitor.pages.cells import DASH, count_rows, esc, or_dash, safe, th_row, when
from clusterwatch.monitor.record.harvester_db import HarvesterDb
from clusterwatch.monitor.record.regulation import LimitInForce, WorkerStarts

CACHE_REFRESH_S = 600 + 60  # the cacher's default refreshInterval plus one of its sleeps
NOT_REPORTED = "not reported (a reporter before telemetry 1.3)"
REMOTE = ("a remote harvester (its record built from the PanDA server): the limit in force is "
          "in its panel above; its worker starts and job-demand cache (the harvester's own "
          "cache_table, which never reaches the PanDA server) are not known here")


@dataclass(frozen=True)
class CacheAge:
    key: str
    updated: Optional[Stamp]
    age_s: Optional[int]  # when the record was collected

    @property
    def late(self) -> bool:
        """Older than the cacher refreshes it, or dated after the record (a clock is off)."""
        return self.age_s is not None and (self.age_s > CACHE_REFRESH_S or self.age_s < 0)


@dataclass(frozen=True)
class Regulation:
    limits_found: bool = False  # the record has this queue's launch limits
    configured: bool = False  # they carry the queue configuration's fields (1.3)
    fields: list[tuple[str, Optional[int]]] = field(default_factory=list)
    limit: Optional[LimitInForce] = None
    starts_error: Optional[str] = None
    starts: Optional[WorkerStarts] = None
    starts_reported: bool = False
    cache_error: Optional[str] = None
    cache: list[CacheAge] = field(default_factory=list)
    cache_reported: bool = False
    remote: bool = False  # a record the monitor built: none of these come from a host


def regulation(database: HarvesterDb, queue: str, sites: Sequence[str],
               now: dt.datetime, remote: bool = False) -> Regulation:
    if remote:
        return Regulation(remote=True)
    entry = database.launch_limits.entries.get(queue)
    limit = entry.limit_in_force if entry is not None else None
    fields = [] if entry is None else [
        ("nQueueLimitWorkerRatio", entry.nQueueLimitWorkerRatio),
        ("nQueueLimitWorkerMin", entry.nQueueLimitWorkerMin),
        ("nQueueLimitWorkerMax", entry.nQueueLimitWorkerMax)]
    starts_part, cache_part = database.worker_starts, database.job_demand_cache
    starts = starts_part.first_of(sites)[1] if starts_part is not None else None
    return Regulation(
        limits_found=entry is not None, configured=limit is not None, fields=fields,
        limit=limit,
        starts_error=starts_part.error if starts_part is not None else None,
        starts=starts, starts_reported=starts_part is not None,
        cache_error=cache_part.error if cache_part is not None else None,
        cache=[] if cache_part is None else [
            CacheAge(key, stamp(found.lastUpdate, now), found.age_s)
            for key, found in sorted(cache_part.entries.items())],
        cache_reported=cache_part is not None)


def _limit_cell(limit: LimitInForce) -> str:
    if limit.error is not None:
        return f'<span class="warn-text">{esc(limit.error)}</span>'
    if limit.value is None:
        return (f"at most <strong>{esc(or_dash(limit.at_most))}</strong> "
                '<span class="muted">(a ratio applies; running workers not counted)</span>')
    return f"<strong>{esc(limit.value)}</strong>"


def _cache_age(age_s: Optional[int]) -> str:
    if age_s is None:
        return DASH
    if age_s < 0:
        return f'<span class="bad-text">dated {esc(duration_text(-age_s))} after collection</span>'
    text = esc(duration_text(age_s))
    return f'<span class="warn-text">{text}</span>' if age_s > CACHE_REFRESH_S else text


def regulation_rows(found: Regulation) -> SafeString:
    """The limit in force, the worker starts and the cache ages as table rows."""
    if found.remote:
        return safe(th_row("Not from a host", esc(REMOTE)))
    rows = []
    if not found.limits_found:
        rows.append(th_row("Limit in force", "no pq_table row for this queue"))
    elif not found.configured or found.limit is None:
        rows.append(th_row("Limit in force", esc(NOT_REPORTED)))
    else:
        rows.append(count_rows(found.fields, name_cell="th"))
        rows.append(th_row("Limit in force", _limit_cell(found.limit)))
        if found.limit.running_workers is not None:
            rows.append(th_row("Running workers it used", esc(found.limit.running_workers),
                               num=True))
        if found.limit.derivation:
            rows.append(th_row("Derived", f'<span class="derivation">'
                                          f"{esc(found.limit.derivation)}</span>"))
    if not found.starts_reported:
        rows.append(th_row("Workers started in the interval", esc(NOT_REPORTED)))
    elif found.starts_error is not None:
        rows.append(th_row("Workers started in the interval",
                           f'<span class="bad-text">{esc(found.starts_error)}</span>'))
    else:
        started = found.starts.started if found.starts is not None else 0
        by_status = ", ".join(f"{esc(status)} {esc(n)}" for status, n in
                              (found.starts.by_status if found.starts is not None else ()))
        rows.append(th_row("Workers started in the interval",
                           f"<strong>{esc(or_dash(started))}</strong>"
                           + (f' <span class="muted">(now {by_status})</span>'
                              if by_status else "")))
    if not found.cache_reported:
        rows.append(th_row("Job-demand cache", esc(NOT_REPORTED)))
    elif found.cache_error is not None:
        rows.append(th_row("Job-demand cache",
                           f'<span class="bad-text">{esc(found.cache_error)}</span>'))
    for cache in found.cache:
        rows.append(th_row(f"Cache {cache.key}",
                           f"{when(cache.updated)}; age when collected "
                           f"{_cache_age(cache.age_s)}"))
    return safe("\n  ".join(rows))
