"""Times in the remote harvester record: the PanDA server's naive UTC timestamps, the
builder's clock, and the record's UTC text.

The server writes its harvester tables in UTC without a zone, so a naive datetime from a row
is UTC; the builder's `now` must be aware (a naive clock would be the host's local time, the
very mistake this module exists to avoid). Inside the builder every time is naive UTC, as
the rows are: tens of thousands of row times are then compared as they come, none converted
(an aware row time is converted once). Two clocks meet here, the server's and this
host's: a row may be dated after `now`. Counting windows are half open, `(start, end]`, so a
row dated ahead is counted by the first run whose window reaches it, never twice and never
dropped.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Hashable, Iterable
from typing import Callable, Optional, TypeVar

UTC = dt.timezone.utc
_EPOCH = dt.datetime(1970, 1, 1)
RowT = TypeVar("RowT")
KeyT = TypeVar("KeyT", bound=Hashable)


def server_time(moment: dt.datetime) -> dt.datetime:
    """A row's timestamp as the server keeps it: naive UTC (an aware one converted)."""
    if moment.tzinfo is None:
        return moment
    return moment.astimezone(UTC).replace(tzinfo=None)


def clock(now: dt.datetime) -> dt.datetime:
    """The builder's `now`, checked (it must say its zone), in server time."""
    if now.tzinfo is None:
        raise ValueError("now must be an aware datetime (UTC), not naive local time")
    return server_time(now)


def utc_text(moment: Optional[dt.datetime]) -> Optional[str]:
    """The record's time form, `YYYY-MM-DDTHH:MM:SSZ` (fractions dropped), or None."""
    return None if moment is None else server_time(moment).strftime("%Y-%m-%dT%H:%M:%SZ")


def seconds(later: dt.datetime, earlier: dt.datetime) -> int:
    """Whole seconds from `earlier` to `later` (negative when `later` is earlier)."""
    return int((server_time(later) - server_time(earlier)).total_seconds() // 1)


def within(moment: Optional[dt.datetime], start: dt.datetime, end: dt.datetime) -> bool:
    """`moment` in the half-open window `(start, end]` (server time); NULL is in none."""
    return moment is not None and start < server_time(moment) <= end


def latest_per(rows: Iterable[RowT], key: Callable[[RowT], KeyT],
               when: Callable[[RowT], Optional[dt.datetime]]) -> dict[KeyT, RowT]:
    """The latest row for each key (a NULL time is the oldest; of two equal, the later one).

    The server replaces a worker, a dialog or an instance in place; should a copy of a table
    hold two rows for one of them anyway, its latest stands."""
    latest: dict[KeyT, RowT] = {}
    for row in rows:
        name = key(row)
        known = latest.get(name)
        if known is None or _time(when(row)) >= _time(when(known)):
            latest[name] = row
    return latest


def _time(moment: Optional[dt.datetime]) -> dt.datetime:
    return _EPOCH if moment is None else server_time(moment)
