"""What the user page shows: the filter form's values, the column headings as sort links,
one page of job rows, and the links to the other pages, from the user's documents.

Pure: documents and the parsed query in, plain text and relative URLs (`?...`) out. Every
link keeps the filters; a new sort or filter starts again at page 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Optional
from urllib.parse import urlencode

from clusterwatch.monitor.usage.analysis.summary_json import UsageDocument
from clusterwatch.monitor.usage.web.job_rows import (
    COLUMNS,
    DEFAULT_ORDER,
    DEFAULT_SORT,
    JobRow,
    Page,
    in_window,
    job_row,
    page_of,
    sort_documents,
    state_counts,
)
from clusterwatch.monitor.usage.web.list_params import UserQuery

# States offered in the filter even when none of the jobs shown has them.
COMMON_STATES = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "RUNNING",
                 "PENDING")


@dataclass(frozen=True)
class Heading:
    text: str
    link: str
    current: Optional[str]  # "asc"/"desc" on the sorted column
    numeric: bool


@dataclass(frozen=True)
class UserView:
    username: str
    window: str  # the time filter in words
    days: str  # the form's values
    since: str
    until: str
    states: tuple[tuple[str, int, bool], ...]  # (state, jobs in the window, selected)
    chosen: str  # the state filter in words ("" when none)
    sort: str
    order: str
    headings: tuple[Heading, ...]
    rows: tuple[JobRow, ...]
    page: Page
    in_window: int  # jobs in the time window, before the state filter
    with_warnings: int  # of the jobs matching the filters
    first_link: Optional[str]
    previous_link: Optional[str]
    next_link: Optional[str]
    last_link: Optional[str]
    # Accounting had more jobs in the period than a list reads: these are its newest
    # `cut_at` (None: the list is whole).
    cut_at: Optional[int] = None
    unreadable: tuple[str, ...] = ()  # job ids ("" for a line without one) left out


def user_view(username: str, documents: Sequence[UsageDocument], query: UserQuery,
              page_size: int, *, cut_at: Optional[int] = None,
              unreadable: Sequence[str] = ()) -> UserView:
    windowed = in_window(documents, (), query.until)
    matching = in_window(windowed, query.states, None)
    ordered = sort_documents(matching, query.sort, query.order)
    page = page_of(len(ordered), query.page, page_size)
    counts = dict(state_counts(windowed))
    offered = list(counts) + [s for s in COMMON_STATES if s not in counts]
    offered += [s for s in query.states if s not in offered]
    return UserView(
        username=username, window=_window(query),
        days="" if query.days is None else str(query.days),
        since="" if query.days is not None else query.since.date().isoformat(),
        until="" if query.until is None else (query.until - timedelta(days=1)).date().isoformat(),
        states=tuple((s, counts.get(s, 0), s in query.states) for s in offered),
        chosen=" or ".join(query.states), sort=query.sort, order=query.order,
        headings=tuple(_heading(query, c.key, c.heading, c.numeric) for c in COLUMNS),
        rows=tuple(job_row(d) for d in ordered[max(page.first - 1, 0):page.last]),
        page=page, in_window=len(windowed),
        with_warnings=sum(1 for d in matching if d["warnings"]),
        first_link=_link(query, page=1) if page.number > 2 else None,
        previous_link=_link(query, page=page.number - 1) if page.number > 1 else None,
        next_link=_link(query, page=page.number + 1) if page.number < page.pages else None,
        last_link=_link(query, page=page.pages) if page.number < page.pages - 1 else None,
        cut_at=cut_at, unreadable=tuple(unreadable))


def _heading(query: UserQuery, key: str, text: str, numeric: bool) -> Heading:
    if key == query.sort:
        flipped = "asc" if query.order == "desc" else "desc"
        return Heading(text, _link(query, sort=key, order=flipped), query.order, numeric)
    first = DEFAULT_ORDER if key == DEFAULT_SORT else next(
        c.first_order for c in COLUMNS if c.key == key)
    return Heading(text, _link(query, sort=key, order=first), None, numeric)


def _link(query: UserQuery, *, sort: Optional[str] = None, order: Optional[str] = None,
          page: int = 1) -> str:
    """`?...` with the query's filters, the given sort and page."""
    pairs: list[tuple[str, str]] = []
    if query.days is not None:
        pairs.append(("days", str(query.days)))
    else:
        pairs.append(("since", query.since.date().isoformat()))
        if query.until is not None:
            pairs.append(("until", (query.until - timedelta(days=1)).date().isoformat()))
    pairs += [("state", state) for state in query.states]
    pairs += [("sort", sort or query.sort), ("order", order or query.order)]
    if page > 1:
        pairs.append(("page", str(page)))
    return "?" + urlencode(pairs)


def _window(query: UserQuery) -> str:
    if query.days is not None:
        return f"that ran in the last {query.days} days"
    since = query.since.date().isoformat()
    if query.until is None:
        return f"that ran since {since}"
    until = (query.until - timedelta(days=1)).date().isoformat()
    return f"that ran since {since} and started by {until}"
