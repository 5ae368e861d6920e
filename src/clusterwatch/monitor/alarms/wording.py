"""How alarm messages say times (spans and ages as the pages do: `humanize`), and how lines
are cut."""

from __future__ import annotations

import time

from clusterwatch.monitor.core.humanize import age_text, duration_text

ELLIPSIS = "…"


def duration(seconds: float) -> str:
    """`42 s`, `25 min`, `3 h 5 min`: as the pages say it."""
    return duration_text(max(0.0, seconds))


def utc(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(t))


def utc_age(t: float, now: float) -> str:
    """`2026-10-02 18:27:05Z, 4 min ago` (a time ahead of the monitor's clock says so)."""
    return f"{utc(t)}, {age_text(now - t)}"


def one_line(text: str, limit: int) -> str:
    """Whitespace runs (newlines, log-level padding) as one space, cut to `limit` characters."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    return flat[: max(0, limit - len(ELLIPSIS))].rstrip() + ELLIPSIS
