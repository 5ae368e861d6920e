"""The latest records of the keys serving a queue, holding what the queue page shows.

One query over `LatestQueue` (indexed by queue), never over the history, reading each row's
slice stored at ingest (`record.slices.queue_slice`): a few KB per harvester instead of its whole
record. A row without a current slice (written before the slices existed, or by an older
slicing) reads its whole record instead, which shows the same.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.db.models import Exists, OuterRef

from clusterwatch.monitor.core.models import HostReport, LatestQueue, RegisteredHarvester
from clusterwatch.monitor.pages.stored import StoredRecord
from clusterwatch.monitor.record.slices import sliced


def serving(queue: str) -> list[StoredRecord]:
    """The latest record of every key whose latest record names `queue`, as its slice."""
    return serving_and_registered(queue)[0]


def serving_and_registered(queue: str) -> tuple[list[StoredRecord], frozenset[str]]:
    """`serving(queue)`, and which of those keys the harvester registry has, in the same
    query (the page's query count stays the same however many harvesters serve it)."""
    rows: Iterable[Mapping[str, Any]] = LatestQueue.objects.filter(queue=queue).annotate(
        registered=Exists(RegisteredHarvester.objects.filter(key=OuterRef("key")))).values(
        "key", "report_id", "report__collected_at", "report__received_at", "page_slice",
        "registered")
    found = []
    registered = set()
    for row in rows:
        if row["registered"]:
            registered.add(row["key"])
        record = sliced(row["page_slice"])
        if record is None:
            record = HostReport.objects.only("record").get(pk=row["report_id"]).record
        found.append(StoredRecord(row["key"], row["report_id"], record,
                                  row["report__collected_at"], row["report__received_at"]))
    return found, frozenset(registered)
