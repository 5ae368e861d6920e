"""The one line that says why a queue gets no work, from what a harvester's record shows.

Checked in order of what blocks first: no fresh data at all, a fetcher log that could not be
read, fetches failing (the 2026-10-02 signature: every fetch failing with one error class),
the worker adjuster refusing new workers, PanDA having nothing, submission failing. When
nothing blocks, it says that jobs arrive.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional

from clusterwatch.monitor.core.humanize import duration_text
from clusterwatch.monitor.core.stamps import Stamp, stale_after_s
from clusterwatch.monitor.pages.failed_calls import FailedCalls
from clusterwatch.monitor.pages.queue_logs import Adjustment, Fetching, Submission


class WhyKind(enum.Enum):
    """Which cause the line names; the page does not print it, tests and callers read it."""

    STALE = "stale"
    FIRST_RUN = "first_run"
    UNREADABLE = "unreadable"
    FETCH_FAILING = "fetch_failing"
    BLOCKED = "blocked"
    NO_JOBS = "no_jobs"
    NO_FETCH = "no_fetch"
    SUBMIT_FAILING = "submit_failing"
    SOME_FAILED = "some_failed"
    WORKING = "working"
    UNCLEAR = "unclear"


class Level(enum.Enum):
    """How bad the cause is; the value is the page's CSS class for the line's colour."""

    OK = "ok"
    WARN = "warn"
    BAD = "bad"

    @property
    def rank(self) -> int:
        """Worse is higher: a queue's line takes its worst harvester's."""
        return _LEVEL_ORDER.index(self)


_LEVEL_ORDER = (Level.OK, Level.WARN, Level.BAD)
_NO_NEW_WORKERS = re.compile(r"^\s*no n_new_workers since (.+)$", re.IGNORECASE)


@dataclass(frozen=True)
class Why:
    kind: WhyKind
    text: str
    level: Level
    error_class: Optional[str] = None
    line: Optional[str] = None  # the failed call's log line that names the cause
    line_at: Optional[Stamp] = None
    line_source: Optional[str] = None


def _classes(fetch: Fetching) -> str:
    return ", ".join(f"{name}: {n}" for name, n in fetch.errors) or "no class recorded"


def _line_for(calls: Sequence[FailedCalls], classes: Sequence[str]) -> Optional[FailedCalls]:
    """The newest failed-call line naming one of the fetch error classes, else the newest."""
    dated = [call for call in calls if call.last_line and call.last_at is not None]
    dated.sort(key=lambda call: call.last_at.age_s if call.last_at else 0.0)
    for call in dated:
        if any(name in (call.last_line or "") for name in classes):
            return call
    return dated[0] if dated else None


def _fetch_failing(fetch: Fetching, calls: Sequence[FailedCalls]) -> Why:
    classes = [name for name, _ in fetch.errors]
    if len(classes) == 1:
        text = (f"every fetch in the last interval failed with {classes[0]} "
                f"({fetch.failed} of {fetch.attempts})")
    else:
        text = f"every fetch in the last interval failed ({_classes(fetch)})"
    call = _line_for(calls, classes)
    return Why(WhyKind.FETCH_FAILING, text, Level.BAD, error_class=classes[0] if classes else None,
               line=call.last_line if call else None, line_at=call.last_at if call else None,
               line_source=f"{call.source}.last" if call else None)


def _blocked(adjust: Adjustment) -> Optional[Why]:
    if not adjust.present:
        return None
    match = _NO_NEW_WORKERS.match(adjust.message or "")
    if match:
        return Why(WhyKind.BLOCKED, f"new workers blocked: {match.group(1)}", Level.WARN)
    if adjust.limit == 0:
        said = f" ({adjust.message})" if adjust.message else ""
        return Why(WhyKind.BLOCKED, f"new workers blocked: {adjust.limit_name or 'limit'}=0{said}",
                   Level.WARN)
    return None


def _reason(fetch: Fetching, submit: Submission, adjust: Adjustment,
            calls: Sequence[FailedCalls], first_run: bool) -> Why:
    if first_run:
        return Why(WhyKind.FIRST_RUN, "the reporter's first run: it set its log positions and "
                   "counted nothing yet", Level.WARN)
    if fetch.error is not None:
        return Why(WhyKind.UNREADABLE, f"the job fetcher log could not be read: {fetch.error}",
                   Level.BAD)
    if fetch.all_failed:
        return _fetch_failing(fetch, calls)
    blocked = _blocked(adjust)
    if blocked is not None:
        return blocked
    last = fetch.last
    if fetch.present and not fetch.jobs_got and last is not None and last.no_jobs:
        when = f" at {last.at.utc}" if last.at else ""
        return Why(WhyKind.NO_JOBS, f"PanDA has no jobs for this queue: last fetch{when} got 0 "
                   f"({last.outcome})", Level.WARN)
    if submit.present and submit.submit_failures and not submit.workers_submitted:
        return Why(WhyKind.SUBMIT_FAILING, f"worker submission failing: {submit.submit_failures} "
                   "failures and no worker submitted in the last interval", Level.BAD)
    if not fetch.present or fetch.attempts == 0:
        return Why(WhyKind.NO_FETCH, "the harvester logged no job fetch for this queue in the last "
                   "interval", Level.WARN)
    if fetch.failed:
        return Why(WhyKind.SOME_FAILED, f"{fetch.failed} of {fetch.attempts} fetches failed "
                   f"({_classes(fetch)}); jobs still arrive: got {fetch.jobs_got or 0}",
                   Level.WARN, error_class=fetch.errors[0][0] if fetch.errors else None)
    if fetch.jobs_got:
        return Why(WhyKind.WORKING, f"jobs arrive: got {fetch.jobs_got} in the last interval",
                   Level.OK)
    outcome = last.outcome if last is not None else "no outcome recorded"
    return Why(WhyKind.UNCLEAR, f"no jobs got in the last interval and no block found (last "
               f"outcome: {outcome})", Level.WARN)


def harvester_why(fetch: Fetching, submit: Submission, adjust: Adjustment,
                  calls: Sequence[FailedCalls], collected: Optional[Stamp], interval_s: int,
                  first_run: bool) -> Why:
    """Why one harvester's queue gets no work, by its latest record."""
    return unless_stale(_reason(fetch, submit, adjust, calls, first_run), collected, interval_s)


def unless_stale(inner: Why, collected: Optional[Stamp], interval_s: int) -> Why:
    """`inner`, or when the record is stale, that it is, with what it last said."""
    if collected is not None and collected.age_s <= stale_after_s(interval_s):
        return inner
    silent = duration_text(collected.age_s) if collected is not None else "an unknown time"
    return Why(WhyKind.STALE, f"harvester silent for {silent}: data is stale "
               f"(its last record said: {inner.text})", Level.BAD, inner.error_class, inner.line,
               inner.line_at, inner.line_source)


def queue_why(per_key: Sequence[tuple[str, Why]]) -> Why:
    """One line for the queue: the harvester's own when one serves it, else each named."""
    if not per_key:
        return Why(WhyKind.UNCLEAR, "no harvester reported this queue", Level.BAD)
    if len(per_key) == 1:
        return per_key[0][1]
    worst = max((why for _, why in per_key), key=lambda why: why.level.rank)
    return Why(worst.kind, "; ".join(f"{key}: {why.text}" for key, why in per_key),
               worst.level, worst.error_class, worst.line, worst.line_at, worst.line_source)
