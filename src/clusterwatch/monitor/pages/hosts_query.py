"""What the hosts overview reads of each key's latest record: the summary ingest stored with
it (`record.slices.host_summary`), never the whole record, except for a row without a
current one."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from clusterwatch.monitor.core.models import HostReport, LatestReport
from clusterwatch.monitor.pages.stored import StoredRecord
from clusterwatch.monitor.record.slices import sliced


def latest_slim_records() -> list[StoredRecord]:
    """Every key's latest record, holding what the overview shows: one query."""
    rows: Iterable[Mapping[str, Any]] = LatestReport.objects.values(
        "key", "report_id", "collected_at", "report__received_at", "summary")
    found = []
    for row in rows:
        record = sliced(row["summary"])
        if record is None:
            record = HostReport.objects.only("record").get(pk=row["report_id"]).record
        found.append(StoredRecord(row["key"], row["report_id"], record, row["collected_at"],
                                  row["report__received_at"]))
    return found
