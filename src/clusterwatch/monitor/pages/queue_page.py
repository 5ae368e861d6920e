"""The PanDA queue page's data: one panel per harvester whose latest record names the queue."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Optional

from clusterwatch.monitor.core.stamps import Stamp, is_stale, stamp
from clusterwatch.monitor.pages.failed_calls import FailedCalls, failed_calls, last_failed_call
from clusterwatch.monitor.pages.queue_dispatch import QueueDispatch, queue_dispatch
from clusterwatch.monitor.pages.queue_logs import (
    Adjustment,
    Fetching,
    Submission,
    adjustment,
    fetching,
    submission,
)
from clusterwatch.monitor.pages.queue_workers import QueueWorkers, queue_workers
from clusterwatch.monitor.pages.remote_panel import RemotePanel, remote_panel, remote_why
from clusterwatch.monitor.pages.stored import StoredRecord
from clusterwatch.monitor.pages.why import Why, harvester_why, queue_why, unless_stale
from clusterwatch.monitor.record.host_record import parse_record
from clusterwatch.monitor.record.slices import REASONS_SHOWN


@dataclass(frozen=True)
class Interval:
    since: Optional[Stamp]
    seconds: Optional[int]
    first_run: bool


@dataclass(frozen=True)
class HarvesterPanel:
    key: str
    report_id: int
    hostname: Optional[str]
    collected: Optional[Stamp]
    received: Optional[Stamp]
    stale: bool
    interval: Interval
    fetching: Fetching
    submission: Submission
    failed_calls: list[FailedCalls]
    last_call: Optional[FailedCalls]
    adjustment: Adjustment
    db: QueueWorkers
    why: Why
    remote: Optional[RemotePanel] = None  # a harvester whose record the monitor built
    dispatch: Optional[QueueDispatch] = None  # queue status and pilot dispatch (1.5-1.7)


@dataclass(frozen=True)
class QueuePage:
    queue: str
    panels: list[HarvesterPanel]
    why: Why
    # Keys serving the queue that the harvester registry lacks: nothing alarms if they stop
    # unless they hold a token.
    unregistered: tuple[str, ...] = ()

    @property
    def several(self) -> bool:
        """Several harvesters serve the queue: each panel then says its own why."""
        return len(self.panels) > 1


def harvester_panel(stored: StoredRecord, queue: str, now: dt.datetime,
                    interval_s: int, reasons_shown: Optional[int] = REASONS_SHOWN,
                    ) -> HarvesterPanel:
    record = parse_record(stored.record)
    interval_s = record.interval.every_s(interval_s)  # staleness by the record's own interval
    collected = stamp(stored.collected_at, now)
    interval = Interval(stamp(record.interval.since, now), record.interval.seconds,
                        record.interval.first_run is True)
    fetch = fetching(record, queue, now)
    submit = submission(record, queue, now)
    adjust = adjustment(record, queue, now)
    calls = failed_calls(record, now)
    remote = remote_panel(record, queue, now)
    why = (unless_stale(remote_why(remote, submit), collected, interval_s) if remote else
           harvester_why(fetch, submit, adjust, calls, collected, interval_s,
                         interval.first_run))
    return HarvesterPanel(
        key=stored.key,
        report_id=stored.report_id,
        hostname=record.hostname,
        collected=collected,
        received=stamp(stored.received_at, now),
        stale=is_stale(collected, interval_s),
        interval=interval,
        fetching=fetch,
        submission=submit,
        failed_calls=calls,
        last_call=last_failed_call(calls),
        adjustment=adjust,
        db=queue_workers(record, queue, now, reasons_shown),
        why=why,
        remote=remote,
        dispatch=queue_dispatch(record, queue, collected, now),
    )


def queue_page(queue: str, stored: Sequence[StoredRecord], now: dt.datetime,
               interval_s: int, every_reason_of: Optional[str] = None,
               registered: Optional[AbstractSet[str]] = None) -> QueuePage:
    """`every_reason_of`: the key whose panel lists every not-finished reason (its `stored`
    must then be the whole record: a slice holds only the reasons shown by default).
    `registered`: the harvester registry's keys (None: not consulted)."""
    panels = [harvester_panel(one, queue, now, interval_s,
                              None if one.key == every_reason_of else REASONS_SHOWN)
              for one in sorted(stored, key=lambda one: one.key)]
    unregistered = (() if registered is None else
                    tuple(panel.key for panel in panels if panel.key not in registered))
    return QueuePage(queue, panels, queue_why([(panel.key, panel.why) for panel in panels]),
                     unregistered)
