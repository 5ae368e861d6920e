"""Records for the alarm tests: schema-valid, with only what the alarms read varied."""

from __future__ import annotations

import calendar
import time
from collections.abc import Mapping
from typing import Any, Optional

from tests.monitor.records import SSL_LINE, store

# 2026-10-02 18:27:05Z: the incident's last failing fetch.
T0 = float(calendar.timegm((2026, 10, 2, 18, 27, 5)))
GIB = 1024**3
READ = {"bytes": 100, "rotated": False, "truncated": False}


def utc(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def volume(used_percent: float, total_gib: float = 100.0, device: str = "254:0") -> dict[str, Any]:
    total = int(total_gib * GIB)
    return {"total_bytes": total, "avail_bytes": int(total * (100 - used_percent) / 100),
            "used_percent": used_percent, "device": device}


def fetch_queue(attempts: int, errors: Optional[Mapping[str, int]] = None,
                at: float = T0) -> dict[str, Any]:
    errors = dict(errors or {})
    failed = sum(errors.values())
    last_error = sorted(errors)[-1] if errors and failed == attempts else None
    return {
        "attempts": attempts, "jobs_asked": 10 * attempts,
        "jobs_got": 0 if failed == attempts else 3, "failed": failed, "errors": errors,
        "last": None if attempts == 0 else {
            "at": utc(at), "label": "managed", "asked": 10, "got": 0 if last_error else 3,
            "outcome": f"failed: {last_error}" if last_error else "OK",
            "error_class": last_error,
        },
        "last_got_jobs_at": None if last_error else utc(at),
    }


def make_record(
    key: str = "pandaharvester01",
    collected_at: float = T0,
    volumes: Any = None,
    queues: Optional[Mapping[str, Any]] = None,
    communicator_line: Optional[str] = SSL_LINE,
) -> dict[str, Any]:
    """A record; by default healthy: one volume at 50 %, one queue fetching fine."""
    if volumes is None:
        volumes = {"/": volume(50.0)}
    if queues is None:
        queues = {"BNL_PanDA_1": fetch_queue(6)}
    return {
        "schema_version": 1,
        "host": key,
        "hostname": f"{key}.sdcc.bnl.gov",
        "collected_at": utc(collected_at),
        "reporter_version": "1.0.0",
        "interval": {"since": utc(collected_at - 300), "seconds": 300, "first_run": False},
        "fetching": {"read": READ, "queues": dict(queues)},
        "submission": {"read": READ, "queues": {}, "recent_pushes": []},
        "adjustment": {"read": READ, "queues": {}},
        "failed_calls": {
            "communicator": {
                "read": READ, "failed": 1 if communicator_line else 0,
                "by_call_and_class": {},
                "last": {"at": utc(collected_at - 180), "line": communicator_line}
                if communicator_line else None,
            },
            "propagator": {"read": READ, "failed": 0, "by_call_and_class": {}, "last": None},
        },
        "daemons": {},
        "processes": {"count": 2},
        "harvester_db": {},
        "health": {"volumes": volumes},
        "delivery": {"backlog": 0, "dropped": 0, "set_aside": 0},
        "collect_seconds": 0.2,
    }


def ssl_failing(key: str = "pandaharvester01", collected_at: float = T0) -> dict[str, Any]:
    """The 2026-10-02 signature: every fetch of both queues failed with SSLError."""
    return make_record(key, collected_at, queues={
        "BNL_PanDA_1": fetch_queue(4, {"SSLError": 4}, collected_at - 60),
        "UM_GREX_PanDA_1": fetch_queue(2, {"SSLError": 2}, collected_at - 120),
    })


def put(key: str, record: dict[str, Any]) -> None:
    """Store a record as ingest does (the latest by collected_at moves with it)."""
    store(record, key)
