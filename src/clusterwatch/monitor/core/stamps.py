"""Times as the pages show them: UTC with an age ("2026-10-02 18:27:05Z, 4 min ago").

Harvester and record times are UTC; so is everything shown, whatever the browser's zone,
because operators compare them with harvester log lines.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from html import escape
from typing import Any, Optional

from django.utils.safestring import SafeString, mark_safe

from clusterwatch.monitor.core.humanize import age_text
from clusterwatch.monitor.record.times import parse_utc

# A key is stale once its newest record is older than this many reporting intervals.
STALE_INTERVALS = 3


@dataclass(frozen=True)
class Stamp:
    """One moment, ready to print: `{{ stamp }}` gives "<utc>, <age>"."""

    utc: str
    age: str
    age_s: float
    iso: str  # for <time datetime=...>

    def __str__(self) -> str:
        return f"{self.utc}, {self.age}"

    @property
    def html(self) -> SafeString:
        """How templates print it: `{{ stamp.html|default:"—" }}`."""
        return mark_safe(  # noqa: S308 - every part is escaped here
            f'<time datetime="{escape(self.iso)}">{escape(self.utc)}</time>, '
            f'<span class="age">{escape(self.age)}</span>')


def as_utc(when: Any) -> Optional[dt.datetime]:
    if isinstance(when, dt.datetime):
        if when.tzinfo is None:
            return when.replace(tzinfo=dt.timezone.utc)
        return when.astimezone(dt.timezone.utc)
    return parse_utc(when)


def stamp(when: Any, now: dt.datetime) -> Optional[Stamp]:
    """A record time (datetime or the schema's UTC string) against `now`; None if absent."""
    moment = as_utc(when)
    if moment is None:
        return None
    age_s = (now - moment).total_seconds()
    iso = moment.strftime("%Y-%m-%dT%H:%M:%SZ")
    return Stamp(utc=iso.replace("T", " "), age=age_text(age_s), age_s=age_s, iso=iso)


def stale_after_s(interval_s: int) -> int:
    return STALE_INTERVALS * interval_s


def is_stale(collected: Optional[Stamp], interval_s: int) -> bool:
    """Older than three reporting intervals (a record with no time at all is stale too)."""
    return collected is None or collected.age_s > stale_after_s(interval_s)
