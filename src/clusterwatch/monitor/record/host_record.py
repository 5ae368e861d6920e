"""A host record as one typed value, parsed once from the stored JSON.

`parse_record` reads a whole record or a page slice (`slices`) alike, and never fails: the
record passed the schema at ingest, but older records, hand-inserted rows and slices that
leave sections out must still read. A section that is absent reads as empty, and
`missing_sections` says which of the sections every current reporter sends were absent.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

from clusterwatch.monitor.record.admission import Admission, admission
from clusterwatch.monitor.record.failed_calls import FailedCallsLog, failed_calls_log
from clusterwatch.monitor.record.harvester_db import HarvesterDb, harvester_db
from clusterwatch.monitor.record.host_state import (
    CharactersReplaced,
    Daemons,
    DeliveryState,
    Health,
    Processes,
    RecordInterval,
    StateDamage,
    characters_replaced,
    daemons,
    delivery_state,
    health,
    processes,
    record_interval,
    state_damage,
)
from clusterwatch.monitor.record.logs import (
    AdjustmentLog,
    FetchingLog,
    SubmissionLog,
    adjustment_log,
    fetching_log,
    submission_log,
)
from clusterwatch.monitor.record.reading import integer, number, obj, text
from clusterwatch.monitor.record.remote_sections import (
    Dialogs,
    Instance,
    QueueStatus,
    dialogs,
    instance,
    queue_status,
)
from clusterwatch.monitor.record.sections import REQUIRED_SECTIONS
from clusterwatch.monitor.record.times import parse_utc


@dataclass(frozen=True)
class HostRecord:
    schema_version: Optional[int] = None
    host: Optional[str] = None  # the key the reporter posts as
    hostname: Optional[str] = None
    collected_at: Optional[dt.datetime] = None
    reporter_version: Optional[str] = None
    interval: RecordInterval = field(default_factory=RecordInterval)
    fetching: FetchingLog = field(default_factory=FetchingLog)
    submission: SubmissionLog = field(default_factory=SubmissionLog)
    adjustment: AdjustmentLog = field(default_factory=AdjustmentLog)
    failed_calls: FailedCallsLog = field(default_factory=FailedCallsLog)
    daemons: Daemons = field(default_factory=Daemons)
    processes: Processes = field(default_factory=Processes)
    harvester_db: HarvesterDb = field(default_factory=HarvesterDb)
    health: Health = field(default_factory=Health)
    delivery: DeliveryState = field(default_factory=DeliveryState)
    collect_seconds: Optional[float] = None
    characters_replaced: Optional[CharactersReplaced] = None
    state: Optional[StateDamage] = None
    # A remote harvester's record (built from the PanDA server) has these; a reporter's not.
    instance: Optional[Instance] = None
    queue_status: Optional[QueueStatus] = None
    dialogs: Optional[Dialogs] = None
    admission: Optional[Admission] = None  # telemetry 1.4 and later
    # Which of REQUIRED_SECTIONS the JSON lacked, in that order.
    missing_sections: tuple[str, ...] = field(default=(), metadata={"derived": True})


def parse_record(stored: Mapping[str, Any]) -> HostRecord:
    """The record (or page slice) `stored`, typed; anything unreadable reads as absent."""
    record = obj(stored)
    return HostRecord(
        schema_version=integer(record.get("schema_version")),
        host=text(record.get("host")),
        hostname=text(record.get("hostname")),
        collected_at=parse_utc(record.get("collected_at")),
        reporter_version=text(record.get("reporter_version")),
        interval=record_interval(record.get("interval")),
        fetching=fetching_log(record.get("fetching")),
        submission=submission_log(record.get("submission")),
        adjustment=adjustment_log(record.get("adjustment")),
        failed_calls=failed_calls_log(record.get("failed_calls")),
        daemons=daemons(record.get("daemons")),
        processes=processes(record.get("processes")),
        harvester_db=harvester_db(record.get("harvester_db")),
        health=health(record.get("health")),
        delivery=delivery_state(record.get("delivery")),
        collect_seconds=number(record.get("collect_seconds")),
        characters_replaced=characters_replaced(record.get("characters_replaced")),
        state=state_damage(record.get("state")),
        instance=instance(record.get("instance")),
        queue_status=queue_status(record.get("queue_status")),
        dialogs=dialogs(record.get("dialogs")),
        admission=admission(record.get("admission")),
        missing_sections=tuple(name for name in REQUIRED_SECTIONS if name not in record),
    )
