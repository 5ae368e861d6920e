"""How alarm messages say sizes, times and ages (as the pages do), and how lines are cut."""

from __future__ import annotations

import time

from clusterwatch.monitor.pages.age import age_text, duration_text

UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")
ELLIPSIS = "…"


def size(num_bytes: float) -> str:
    """Binary units with one decimal, as `df -h` reads: 7421703782 -> `6.9 GiB`."""
    value = float(num_bytes)
    for unit in UNITS[:-1]:
        if abs(value) < 1024:
            return f"{value:.0f} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} {UNITS[-1]}"


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
