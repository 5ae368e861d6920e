"""The `/alarms/` page's data: what `alarms_status` prints, for operators without a shell on
the monitor, with each open alarm's silence and acknowledgement and the list of silences.

A page like the others, so it lives with them: the alarms never import the pages. Pure:
pages.alarm_views reads the rows and says whether the reader may change anything (staff).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any, Optional

from clusterwatch.monitor.alarms import lease as run_lease
from clusterwatch.monitor.core.humanize import duration_text
from clusterwatch.monitor.core.stamps import Stamp, stamp
from clusterwatch.notify.event import Event
from clusterwatch.notify.silences import Silence, utc


def until_text(t: float, now: float) -> str:
    """`2026-12-04 20:00Z (in 1 h 30 min)`: an end time, with how far off it is."""
    if t <= now:
        return utc(t)
    return f"{utc(t)} (in {duration_text(t - now)})"


def _marks(item: Mapping[str, Any], now: float, now_dt: dt.datetime) -> dict[str, Any]:
    """An open alarm's silence and acknowledgement, from its `status.summary` item."""
    held, ack = item["held_by"], item["acknowledged"]
    return {
        "held": held and {"by": held["by"], "author": held["author"],
                          "comment": held["comment"], "until": until_text(held["until"], now),
                          "silence": held["by"].removeprefix("silence ")
                          if held["by"].startswith("silence ") else None},
        "ack": ack and {"by": ack["by"], "since": _stamp(ack["at"], now_dt),
                        "comment": ack["comment"]},
    }


def silence_rows(found: Sequence[Silence], now: float) -> list[dict[str, Any]]:
    now_dt = dt.datetime.fromtimestamp(now, tz=dt.timezone.utc)
    rows = []
    for silence in found:
        if silence.active(now):
            state = "active"
        elif silence.starts_at > now:
            state = "pending"
        elif silence.expired_at is not None and silence.expired_at < silence.ends_at:
            state = "expired"
        else:
            state = "ended"
        rows.append({
            "id": silence.id, "matchers": [str(m) for m in silence.matchers],
            "author": silence.author, "comment": silence.comment, "state": state,
            "running": silence.ended_at > now, "from": _stamp(silence.starts_at, now_dt),
            "until": until_text(silence.ended_at, now),
        })
    return rows


def _stamp(t: Optional[float], now: dt.datetime) -> Optional[Stamp]:
    return None if t is None else stamp(dt.datetime.fromtimestamp(t, tz=dt.timezone.utc), now)


def alarms_context(
    data: dict[str, Any], now_t: float, silences: Sequence[Silence] = (), staff: bool = False,
) -> dict[str, Any]:
    """The template's view of `status.summary`: times as stamps, events as lines, each open
    alarm's silence and acknowledgement; `staff`: whether the forms are shown."""
    now = dt.datetime.fromtimestamp(now_t, tz=dt.timezone.utc)
    run = data["last_run"]
    lease = data["lease"]
    return {
        "last_run": run and {**run, "at": _stamp(run.get("t"), now)},
        "running": lease and {"holder": run_lease.describe(lease["holder"]),
                              "until": _stamp(lease["expires_at"], now)},
        "open_alarms": [{**item, "since": _stamp(item["since"], now),
                         **_marks(item, now_t, now)}
                        for item in data["open_alarms"]],
        "silences": silence_rows(silences, now_t),
        "staff": staff,
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
