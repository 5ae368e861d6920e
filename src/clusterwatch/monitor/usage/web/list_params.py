"""The query parameters of the user and staff pages, read strictly: a value that is not one
the page offers is a BadParameter (a 400 page saying which and why), never a guess.

Pure: the request's parameters (a mapping of name -> values) and the clock are parameters.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, timezone
from typing import Optional

from clusterwatch.monitor.usage.analysis.rules import CODES
from clusterwatch.monitor.usage.web.job_rows import BY_KEY, DEFAULT_ORDER, DEFAULT_SORT

MAX_DAYS = 366  # as the API: one accounting call never spans more than a year
USER_DAYS, STAFF_DAYS = 30, 7
STAFF_SORTS = ("cpu_efficiency", "memory_efficiency")
_STATE = re.compile(r"[A-Z_]{1,32}")
_PAGE = re.compile(r"[0-9]{1,6}")
_DAYS = re.compile(r"[0-9]{1,3}")
# ASCII digits only ([0-9] in a str pattern is ASCII): the form's date input sends this
# shape; date.fromisoformat would also read 20261129 and week dates (2026-W01-1).
_DATE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")

Params = Mapping[str, Sequence[str]]


class BadParameter(ValueError):
    """A parameter the page cannot use; the message is one line naming it."""


@dataclass(frozen=True)
class UserQuery:
    since: datetime
    until: Optional[datetime]  # exclusive: the day after ?until=
    days: Optional[int]  # None when since/until dates were given
    states: tuple[str, ...]
    sort: str
    order: str
    page: int


@dataclass(frozen=True)
class StaffQuery:
    since: datetime
    days: int
    sort: str
    warning: Optional[str]


def user_query(params: Params, now: datetime) -> UserQuery:
    since_text, until_text = _one(params, "since"), _one(params, "until")
    days: Optional[int] = None
    if since_text or until_text:
        since = _day(since_text, "since") if since_text else _day_of(now) - timedelta(
            days=USER_DAYS)
        # No job starts after today, so a later day means today: clamped, the day after it
        # stays within what a datetime holds (9999-12-31 has none).
        until = (min(_day(until_text, "until"), _day_of(now)) + timedelta(days=1)
                 if until_text else None)
        if since < now - timedelta(days=MAX_DAYS):
            raise BadParameter(f"since must be within the last {MAX_DAYS} days")
        if since > now:
            raise BadParameter("since is in the future")
        if until is not None and until <= since:
            raise BadParameter("until must not be before since")
    else:
        days = days_back(params, USER_DAYS)
        since, until = now - timedelta(days=days), None
    states = tuple(dict.fromkeys(s for s in params.get("state", ()) if s))
    for state in states:
        if not _STATE.fullmatch(state):
            raise BadParameter(f"not a job state: {state[:40]!r}")
    sort = _one(params, "sort") or DEFAULT_SORT
    if sort not in BY_KEY:
        raise BadParameter(f"sort must be one of {', '.join(BY_KEY)}")
    order = _one(params, "order") or (DEFAULT_ORDER if sort == DEFAULT_SORT
                                      else BY_KEY[sort].first_order)
    if order not in ("asc", "desc"):
        raise BadParameter("order must be asc or desc")
    page_text = _one(params, "page") or "1"
    if not _PAGE.fullmatch(page_text) or int(page_text) < 1:
        raise BadParameter("page must be a whole number from 1")
    return UserQuery(since, until, days, states, sort, order, int(page_text))


def staff_query(params: Params, now: datetime) -> StaffQuery:
    days = days_back(params, STAFF_DAYS)
    sort = _one(params, "sort") or STAFF_SORTS[0]
    if sort not in STAFF_SORTS:
        raise BadParameter(f"sort must be one of {', '.join(STAFF_SORTS)}")
    warning = _one(params, "warning") or None
    if warning is not None and warning not in CODES:
        raise BadParameter(f"warning must be one of {', '.join(CODES)}")
    return StaffQuery(now - timedelta(days=days), days, sort, warning)


def _one(params: Params, name: str) -> str:
    values = params.get(name, ())
    if len(values) > 1:
        raise BadParameter(f"{name} is given {len(values)} times")
    return values[0].strip() if values else ""


def days_back(params: Params, default: int) -> int:
    """`?days=N` (1-366), `default` when absent; the pages and the JSON API read it here."""
    text = _one(params, "days")
    if not text:
        return default
    # Not str.isdigit: it takes other scripts' digits ("٣") that int() reads too.
    if not _DAYS.fullmatch(text) or not 1 <= int(text) <= MAX_DAYS:
        raise BadParameter(f"days must be a whole number from 1 to {MAX_DAYS}")
    return int(text)


def _day(text: str, name: str) -> datetime:
    match = _DATE.fullmatch(text)
    try:
        if match is None:
            raise ValueError(text)
        day = date(*(int(part) for part in match.groups()))  # month 13, 2026-02-30: refused
    except ValueError:
        raise BadParameter(f"{name} must be a date like 2026-11-29, not {text[:40]!r}") from None
    return datetime.combine(day, time(), tzinfo=timezone.utc)


def _day_of(now: datetime) -> datetime:
    return datetime.combine(now.astimezone(timezone.utc).date(), time(), tzinfo=timezone.utc)
