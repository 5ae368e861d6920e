"""What the queue page shows of one harvester's queue status and pilot dispatch (telemetry
1.5 to 1.7): the effective queueStatus, which payload images the queue's pilots run, read from
its submit template (with the template's short hash), and how old that evidence is: the
record's collection time, and for an image policy the allocator state it was held to.

A reporter before 1.6 and the remote harvester (its templates sit under another account and
no reporter reads them) give no reading: the page says which, and never shows a kind it was
not told. `unknown` is shown as "no image compatibility assumed".
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Optional

from clusterwatch.monitor.core.stamps import Stamp, stamp
from clusterwatch.monitor.record.host_record import HostRecord
from clusterwatch.monitor.record.pilot_dispatch import PilotDispatch

SHORT_HASH = 12
KIND_TEXT = {
    "image_bound": "image-bound: its pilots run only jobs of the image below",
    "per_job": "per job: a per-job launcher runs each job in the job's own image",
    "unrestricted": "unrestricted: native per-job dispatch (within the image policy, if any)",
    "unknown": "unknown: no image compatibility assumed",
}
BEFORE_1_6 = "not reported (a reporter before telemetry 1.6)"
REMOTE = ("not reported: the remote harvester's submit templates are not readable from the "
          "monitor")


@dataclass(frozen=True)
class QueueDispatch:
    status: Optional[str]  # the effective queueStatus
    active: Optional[bool]
    status_error: Optional[str]  # the queue configuration could not be read, or none sent
    reading: Optional[PilotDispatch]
    missing: Optional[str]  # why there is no reading
    evidence: Optional[Stamp]  # the record's collection: when the template was read
    state_updated: Optional[Stamp]  # the image allocator's state the policy was held to

    @property
    def kind_text(self) -> str:
        return KIND_TEXT[self.reading.kind] if self.reading is not None else ""

    @property
    def short_hash(self) -> Optional[str]:
        sha = self.reading.sha256 if self.reading is not None else None
        return sha[:SHORT_HASH] if sha else None


def queue_dispatch(record: HostRecord, queue: str, collected: Optional[Stamp],
                   now: dt.datetime) -> QueueDispatch:
    section = record.queue_status
    entry = section.queues.get(queue) if section is not None else None
    if section is None:
        status_error: Optional[str] = "no queue_status in this record"
    elif entry is None:
        status_error = section.error or "the queue configuration holds no such queue"
    else:
        status_error = None
    reading = entry.pilot_dispatch if entry is not None else None
    missing = None
    if reading is None:
        missing = REMOTE if record.instance is not None else BEFORE_1_6
    policy = reading.policy if reading is not None else None
    return QueueDispatch(
        status=entry.status if entry is not None else None,
        active=entry.active if entry is not None else None,
        status_error=status_error, reading=reading, missing=missing, evidence=collected,
        state_updated=stamp(policy.state_updated_at, now) if policy is not None else None)
