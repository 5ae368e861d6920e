"""The latest records of the keys serving a queue, holding what the queue page shows.

One query over `LatestQueue` (indexed by queue), never over the history. For the usual queue
name the database extracts only that queue's parts of each record (see `slim`); a name
that cannot be written safely as a JSON path (quotes, spaces, "error", which is also a key
of the record's sections) reads whole records instead, as does a harvester whose
`pq_table` names the queue's site differently (its workers are filed under the site).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from clusterwatch.monitor.models import HostReport, LatestQueue
from clusterwatch.monitor.pages.reading import obj
from clusterwatch.monitor.pages.slim import JsonPath, path_annotations, rebuild
from clusterwatch.monitor.pages.stored import StoredRecord

_PATH_SAFE = re.compile(r"[A-Za-z0-9_.+-]{1,200}")
_SECTION_KEYS = {"error", "read", "queues", "recent_pushes"}
DB_QUEUE_PARTS = ("launch_limits", "workers_now", "workers_ended", "workers_not_finished")
DB_ERROR_PARTS = (*DB_QUEUE_PARTS, "workers_not_finished_candidates")
LOG_SECTIONS = ("fetching", "submission", "adjustment")


def path_safe(queue: str) -> bool:
    return _PATH_SAFE.fullmatch(queue) is not None and queue not in _SECTION_KEYS


def queue_paths(queue: str) -> tuple[JsonPath, ...]:
    return (
        (("hostname",), "text"),
        (("interval",), "json"),
        *(((section, "error"), "text") for section in LOG_SECTIONS),
        *(((section, "read"), "json") for section in LOG_SECTIONS),
        *(((section, "queues", queue), "json") for section in LOG_SECTIONS),
        (("submission", "recent_pushes"), "json"),
        (("failed_calls",), "json"),
        (("harvester_db", "error"), "text"),
        (("harvester_db", "queue_config_error"), "text"),
        *((("harvester_db", part, "error"), "text") for part in DB_ERROR_PARTS),
        *((("harvester_db", part, queue), "json") for part in DB_QUEUE_PARTS),
        (("harvester_db", "workers_not_finished_candidates"), "json"),
    )


def _whole(rows: Iterable[Any]) -> list[StoredRecord]:
    return [StoredRecord(row.key, row.report.pk, row.report.record, row.report.collected_at,
                         row.report.received_at) for row in rows]


def _filed_under_another_site(record: Mapping[str, Any], queue: str) -> bool:
    limits = obj(obj(obj(record.get("harvester_db")).get("launch_limits")).get(queue))
    site = limits.get("siteName")
    return isinstance(site, str) and site != queue


def serving(queue: str) -> list[StoredRecord]:
    """The latest record of every key whose latest record names `queue`."""
    if not path_safe(queue):
        return _whole(LatestQueue.objects.filter(queue=queue).select_related("report"))
    paths = queue_paths(queue)
    extra = path_annotations("report__record", paths, ())
    rows: Iterable[Mapping[str, Any]] = (
        LatestQueue.objects.filter(queue=queue).annotate(**extra)
        .values("key", "report_id", "report__collected_at", "report__received_at", *extra))
    found = []
    for row in rows:
        record = rebuild(row, paths, ())
        if _filed_under_another_site(record, queue):
            record = HostReport.objects.only("record").get(pk=row["report_id"]).record
        found.append(StoredRecord(row["key"], row["report_id"], record,
                                  row["report__collected_at"], row["report__received_at"]))
    return found
