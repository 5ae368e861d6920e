"""What the hosts overview reads of each key's latest record, and only that (see `slim`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from clusterwatch.monitor.models import LatestReport
from clusterwatch.monitor.pages.slim import JsonPath, path_annotations, rebuild
from clusterwatch.monitor.pages.source_problems import REQUIRED_SECTIONS
from clusterwatch.monitor.pages.stored import StoredRecord

DB_PARTS = ("launch_limits", "workers_now", "workers_ended", "workers_not_finished",
            "workers_not_finished_candidates", "service_metrics")
PATHS: tuple[JsonPath, ...] = (
    (("hostname",), "text"),
    (("reporter_version",), "text"),
    *(((section, "error"), "text") for section in ("fetching", "submission", "adjustment")),
    *(((section, "read"), "json") for section in ("fetching", "submission", "adjustment")),
    *(((section,), "json") for section in ("failed_calls", "daemons", "processes", "health",
                                           "delivery")),
    (("harvester_db", "error"), "text"),
    (("harvester_db", "queue_config_error"), "text"),
    *((("harvester_db", part, "error"), "text") for part in DB_PARTS),
)


def latest_slim_records() -> list[StoredRecord]:
    """Every key's latest record, holding what the overview shows: one query."""
    extra = path_annotations("report__record", PATHS, REQUIRED_SECTIONS)
    rows: Iterable[Mapping[str, Any]] = LatestReport.objects.annotate(**extra).values(
        "key", "report_id", "report__collected_at", "report__received_at", *extra)
    return [StoredRecord(row["key"], row["report_id"], rebuild(row, PATHS, REQUIRED_SECTIONS),
                         row["report__collected_at"], row["report__received_at"])
            for row in rows]
