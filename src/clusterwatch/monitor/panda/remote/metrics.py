"""The remote record's `harvester_db.service_metrics`: the harvester's latest service metrics
per login node, from the PanDA server's `harvester_metrics`.

The harvester's service monitor measures its host every 5 minutes (memory, CPU, the use of
its disk volumes, its certificates' lifetimes) and its propagator sends the rows on, the
harvester's `sm_table.metrics` JSON text as it is, with `harvester_host` its
`socket.getfqdn()`: one host per login node it has run on. The part keeps the reporter's shape
(`hostName`, `creationTime`, `metrics`: the newest row) and adds `by_host`, the newest row of
each host. Metrics that are not a JSON object read as `{"error": ...}`, never a failure.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any, Optional

from clusterwatch.monitor.ingest.body import parse_object
from clusterwatch.monitor.ingest.errors import Rejection
from clusterwatch.monitor.panda.remote.times import latest_per, seconds, server_time, utc_text
from clusterwatch.monitor.panda.server_rows import MetricsRow, Rows, SourceFailed
from clusterwatch.reporter.monitor_surface import json_kind

NO_HOST = "(null)"


def service_metrics(harvester_id: str, rows: Rows[MetricsRow],
                    now: dt.datetime) -> dict[str, Any]:
    if isinstance(rows, SourceFailed):
        return {"error": f"harvester_metrics: {rows.reason}"}
    latest = latest_per((row for row in rows if row["harvester_id"] == harvester_id),
                        lambda row: row["harvester_host"] or NO_HOST,
                        lambda row: row["creation_time"])
    by_host = {host: {"creationTime": utc_text(row["creation_time"]),
                      "age_s": max(seconds(now, row["creation_time"]), 0),
                      "metrics": parse_metrics(row["metrics"])}
               for host, row in sorted(latest.items())}
    newest: Optional[str] = max(latest, key=lambda host: server_time(latest[host]["creation_time"]),
                                default=None)
    if newest is None:
        return {"hostName": None, "creationTime": None, "metrics": None, "by_host": {}}
    return {"hostName": newest, "creationTime": by_host[newest]["creationTime"],
            "metrics": by_host[newest]["metrics"], "by_host": by_host}


def parse_metrics(text: Optional[str]) -> Any:
    """The metrics object, or `{"error": ...}` saying what the text is instead."""
    if text is None:
        return {"error": "no metrics (NULL)"}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        return {"error": f"not valid JSON: {error.msg} at line {error.lineno} "
                         f"column {error.colno}"}
    except (RecursionError, ValueError):  # nested too deep; a number too long to convert
        return {"error": "not usable JSON"}
    if not isinstance(value, dict):
        return {"error": f"{json_kind(value)}, not an object of metrics"}
    try:  # ingest's body checks: a NUL, a lone surrogate, NaN or deep nesting in here would
        # have the whole record refused at each run, not only this login node's metrics
        parse_object(json.dumps(value).encode("ascii"))
    except Rejection as refused:
        return {"error": f"not usable JSON: {refused.detail}"}
    return value
