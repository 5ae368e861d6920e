"""The hosts overview, one row per reporting key, computed from its latest record."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional

from clusterwatch.monitor.core.humanize import duration_text, size_text
from clusterwatch.monitor.core.stamps import Stamp, is_stale, stale_after_s, stamp
from clusterwatch.monitor.pages.failed_calls import FailedCalls, failed_calls
from clusterwatch.monitor.pages.source_problems import SourceProblem, failed_sources
from clusterwatch.monitor.pages.stored import StoredRecord
from clusterwatch.monitor.record.host_record import HostRecord, parse_record


@dataclass(frozen=True)
class Volume:
    mount: str
    used_percent: float
    avail: str
    total: str


@dataclass(frozen=True)
class Delivery:
    backlog: Optional[int]
    dropped: Optional[int]
    set_aside: Optional[int]
    reasons: list[tuple[str, int]]
    last_error: Optional[str]
    last_error_at: Optional[Stamp]
    oldest_at: Optional[Stamp]
    error: Optional[str]

    @property
    def troubled(self) -> bool:
        return bool(self.backlog or self.dropped or self.set_aside or self.error)


@dataclass(frozen=True)
class HostRow:
    key: str
    report_id: int
    hostname: Optional[str]
    reporter_version: Optional[str]
    collected: Optional[Stamp]
    stale: bool
    problems: list[SourceProblem]
    call_failures: list[FailedCalls]  # the daemons with failed calls
    delivery: Delivery
    fullest: Optional[Volume]
    processes: Optional[int]
    queues: list[str]

    @property
    def silent_for(self) -> str:
        """How long the key has been quiet, said on stale rows."""
        if self.collected is None:
            return "no collection time"
        return f"silent for {duration_text(self.collected.age_s)}"


def volume_size(n_bytes: Optional[float]) -> str:
    """A volume's size as the overview shows it: "—" when the reading has none."""
    return "—" if n_bytes is None else size_text(n_bytes, largest="TiB")


def fullest_volume(record: HostRecord) -> Optional[Volume]:
    """The volume with the highest use; aliases (`same_as`) and unreadable ones skipped."""
    volumes = record.health.volumes
    best: Optional[Volume] = None
    for mount, entry in sorted((volumes.mounts if volumes else {}).items()):
        used = entry.used_percent if entry else None
        if entry is None or used is None or (best is not None and used <= best.used_percent):
            continue
        best = Volume(mount, used, volume_size(entry.avail_bytes),
                      volume_size(entry.total_bytes))
    return best


def delivery(record: HostRecord, now: dt.datetime) -> Delivery:
    section = record.delivery
    return Delivery(
        backlog=section.backlog,
        dropped=section.dropped,
        set_aside=section.set_aside,
        reasons=list(section.reasons),
        last_error=section.last_error,
        last_error_at=stamp(section.last_error_at, now),
        oldest_at=stamp(section.oldest_at, now),
        error=section.error,
    )


def host_row(key: str, report_id: int, stored: Mapping[str, Any],
             collected_at: dt.datetime, queues: Sequence[str], now: dt.datetime,
             interval_s: int) -> HostRow:
    """The row of one key, from its latest record (or the summary stored with it)."""
    record = parse_record(stored)
    collected = stamp(collected_at, now)
    return HostRow(
        key=key,
        report_id=report_id,
        hostname=record.hostname,
        reporter_version=record.reporter_version,
        collected=collected,
        stale=is_stale(collected, record.interval.every_s(interval_s)),
        problems=failed_sources(record),
        call_failures=[calls for calls in failed_calls(record, now) if calls.failed],
        delivery=delivery(record, now),
        fullest=fullest_volume(record),
        processes=record.processes.count,
        queues=sorted(queues),
    )


@dataclass(frozen=True)
class NeverReported:
    """A key a token may write, or the harvester registry names, that has no record yet."""

    key: str
    tokens: list[str]  # lookup prefixes, never more of a token
    since: Optional[Stamp]  # the oldest such token's creation, or its registration if older
    registered: Optional[str] = None  # "remote" or "reporting" when in the registry


@dataclass(frozen=True)
class HostsPage:
    rows: list[HostRow]
    never_reported: list[NeverReported]
    interval_s: int
    stale_after: str

    @property
    def stale_count(self) -> int:
        return sum(row.stale for row in self.rows)


def hosts_page(stored: Sequence[StoredRecord], queues: Mapping[str, Sequence[str]],
               token_keys: Iterable[tuple[str, str, dt.datetime]], now: dt.datetime,
               interval_s: int, registered: Iterable[tuple[str, bool, dt.datetime]] = (),
               ) -> HostsPage:
    """`token_keys`: (key, token prefix, token created_at) for every active token's key;
    `registered`: (key, remote, registered_at) for every key of the harvester registry."""
    rows = [host_row(one.key, one.report_id, one.record, one.collected_at,
                     queues.get(one.key, ()), now, interval_s)
            for one in sorted(stored, key=lambda one: one.key)]
    reported = {one.key for one in stored}
    waiting: dict[str, list[tuple[dt.datetime, str]]] = {}
    for key, prefix, created_at in token_keys:
        if key not in reported:
            waiting.setdefault(key, []).append((created_at, prefix))
    kinds: dict[str, str] = {}
    for key, remote, registered_at in registered:
        if key not in reported:
            kinds[key] = "remote" if remote else "reporting"
            # A registration waits like a token created then (the alarm counts from it too).
            waiting.setdefault(key, []).append((registered_at, ""))
    never = [NeverReported(key, [prefix for _, prefix in sorted(tokens) if prefix],
                           stamp(min(tokens)[0], now), kinds.get(key))
             for key, tokens in sorted(waiting.items())]
    return HostsPage(rows, never, interval_s, duration_text(stale_after_s(interval_s)))
