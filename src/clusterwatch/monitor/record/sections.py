"""The record's sections and the names ingest, the pages and the alarms share about them.

The schema (`clusterwatch/reporter/record-v1.schema.json`) is the contract; these are the
few facts about its shape that code branches on.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

from clusterwatch.monitor.record.reading import error_of, obj, text

# Sections read from one harvester log each, their `queues` object keyed by PanDA queue name.
SECTION_LOGS = {
    "fetching": "panda-job_fetcher.log",
    "submission": "panda-submitter.log",
    "adjustment": "panda-worker_adjuster.log",
}
LOG_SECTIONS = tuple(SECTION_LOGS)
# The daemons whose failed calls to the PanDA server `failed_calls` counts (panda-<daemon>.log).
CALL_DAEMONS = ("communicator", "propagator")
# Every section a current reporter sends; one missing is a problem the hosts overview names.
REQUIRED_SECTIONS = ("fetching", "submission", "adjustment", "failed_calls", "daemons",
                     "processes", "harvester_db", "health", "delivery")
# harvester_db parts keyed directly by queue (computingSite) name, or `{"error": ...}`.
DB_QUEUE_PARTS = ("launch_limits", "workers_now", "workers_ended")
# The launch limits `pq_table` gives a queue (and each of its jobType/resourceType pairs).
LIMITS = ("nQueueLimitWorker", "maxWorkers", "nQueueLimitJob", "nNewWorkers")


def sites_of(queue: str, limits_error: Optional[str], site_name: Optional[str]) -> list[str]:
    """The names the `work_table` parts may file a queue's workers under: the queue, then its
    `pq_table` siteName (from a readable launch_limits entry) when that differs."""
    if limits_error is None and site_name is not None and site_name != queue:
        return [queue, site_name]
    return [queue]


def queue_sites(database: Mapping[str, Any], queue: str) -> list[str]:
    """`sites_of` for a `harvester_db` object as stored."""
    part = database.get("launch_limits")
    entry = obj(obj(part).get(queue))
    return sites_of(queue, error_of(part), text(entry.get("siteName")) if entry else None)
