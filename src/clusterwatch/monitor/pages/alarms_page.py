"""The `/alarms/` page's data: what `alarms_status` prints, for operators without a shell on
the monitor.

A page like the others, so it lives with them: the alarms never import the pages.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Optional

from clusterwatch.monitor.alarms import lease as run_lease
from clusterwatch.monitor.core.stamps import Stamp, stamp
from clusterwatch.notify.event import Event


def _stamp(t: Optional[float], now: dt.datetime) -> Optional[Stamp]:
    return None if t is None else stamp(dt.datetime.fromtimestamp(t, tz=dt.timezone.utc), now)


def alarms_context(data: dict[str, Any], now_t: float) -> dict[str, Any]:
    """The template's view of `status.summary`: times as stamps, events as lines."""
    now = dt.datetime.fromtimestamp(now_t, tz=dt.timezone.utc)
    run = data["last_run"]
    lease = data["lease"]
    return {
        "last_run": run and {**run, "at": _stamp(run.get("t"), now)},
        "running": lease and {"holder": run_lease.describe(lease["holder"]),
                              "until": _stamp(lease["expires_at"], now)},
        "open_alarms": [{**item, "since": _stamp(item["since"], now)}
                        for item in data["open_alarms"]],
        "recently_closed": [{**item, "closed": _stamp(item["closed"], now)}
                            for item in data["recently_closed"]],
        "channels": [
            {"name": name,
             "pending": [Event.from_json(e).line() for e in channel["pending"]],
             "dead": [Event.from_json(e).line() for e in channel["dead_letters"]],
             "rate_limited_until": _stamp(channel["rate_limited_until"], now),
             "last_error": channel["last_error"],
             "last_error_at": _stamp(channel["last_error_t"], now),
             "last_success_at": _stamp(channel["last_success_t"], now)}
            for name, channel in data["channels"].items()
        ],
    }
