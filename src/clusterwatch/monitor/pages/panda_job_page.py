"""The PanDA job page's data (`/jobs/<pandaid>/`): for a PanDA job that is activated and not yet
fetched, the last fetch of its queue by each harvester serving it (when it last asked, and
what it got).

The queue comes from a worker-to-PandaID push the harvester reported, when there is one (it
also names the worker), else from the `queue` the operator gave.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional

from clusterwatch.monitor.core.stamps import Stamp, stamp
from clusterwatch.monitor.pages.queue_page import QueuePage, queue_page
from clusterwatch.monitor.pages.stored import StoredRecord

QUEUE_NAME_MAX = 200  # LatestQueue.queue's length


@dataclass(frozen=True)
class PushSeen:
    """A `JobPush` row: the harvester `key` submitted `workerid` for the job at `at`."""

    key: str
    workerid: int
    queue: str
    at: dt.datetime


@dataclass(frozen=True)
class PushShown:
    key: str
    workerid: int
    queue: str
    at: Optional[Stamp]


@dataclass(frozen=True)
class JobQueue:
    queue: Optional[str]
    source: str  # "panda", "push", "asked" or "none"


@dataclass(frozen=True)
class JobPage:
    pandaid: int
    queue: Optional[str]
    queue_source: str
    pushes: list[PushShown]
    queue_page: Optional[QueuePage]
    asked_queue: str  # what the form shows back

    @property
    def needs_queue(self) -> bool:
        return self.queue is None

    @property
    def queue_unknown(self) -> bool:
        """A queue was named but no harvester's latest record mentions it."""
        return self.queue is not None and (self.queue_page is None or not self.queue_page.panels)


def clean_queue_name(raw: Optional[str]) -> Optional[str]:
    """The `?queue=` value, trimmed; None when empty or longer than any stored name."""
    if raw is None:
        return None
    name = raw.strip()
    return name if 0 < len(name) <= QUEUE_NAME_MAX else None


def job_queue(pushes: Sequence[PushSeen], asked: Optional[str],
              server: Optional[str] = None) -> JobQueue:
    """The PanDA server's queue for an activated job (its `computingsite`) is the truth; then
    the newest push's queue (a fact the harvester logged) wins over the operator's guess."""
    if server is not None:
        return JobQueue(server, "panda")
    if pushes:
        return JobQueue(max(pushes, key=lambda push: push.at).queue, "push")
    if asked is not None:
        return JobQueue(asked, "asked")
    return JobQueue(None, "none")


def job_page(pandaid: int, pushes: Sequence[PushSeen], asked: Optional[str],
             stored: Sequence[StoredRecord], now: dt.datetime, interval_s: int,
             server_queue: Optional[str] = None) -> JobPage:
    """`stored`: the latest records of the keys serving `job_queue(...).queue`."""
    chosen = job_queue(pushes, asked, server_queue)
    shown = [PushShown(push.key, push.workerid, push.queue, stamp(push.at, now))
             for push in sorted(pushes, key=lambda push: push.at, reverse=True)]
    page = (queue_page(chosen.queue, stored, now, interval_s)
            if chosen.queue is not None else None)
    return JobPage(pandaid, chosen.queue, chosen.source, shown, page, asked or "")
