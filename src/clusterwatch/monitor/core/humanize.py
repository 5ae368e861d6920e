"""How the monitor says sizes, durations and ages to people, on the pages and in alarms alike.

Sizes in binary units as `df -h` prints them, spans in their two largest units, ages that
say so when a time is ahead of the monitor's clock instead of hiding it.
"""

from __future__ import annotations

BINARY_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def size_text(num_bytes: float, largest: str = "PiB") -> str:
    """Binary units with one decimal, whole bytes: 7421703782 -> "6.9 GiB", 512 -> "512 B".

    Nothing beyond `largest`: the hosts overview has always stopped at TiB ("5120.0 TiB").
    """
    units = BINARY_UNITS[: BINARY_UNITS.index(largest) + 1]
    value = float(num_bytes)
    for unit in units:
        if abs(value) < 1024 or unit == units[-1]:
            return f"{value:.0f} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable: the last unit always answers")


def duration_text(seconds: float) -> str:
    """A span in the largest two units that matter: "45 s", "4 min", "3 h 5 min", "2 d 3 h"."""
    whole = int(abs(seconds))
    if whole < 60:
        return f"{whole} s"
    minutes = whole // 60
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h" if hours else f"{days} d"


def age_text(seconds: float) -> str:
    """How long ago; a time ahead of the monitor's clock is said as such, not hidden."""
    if -1 < seconds < 1:
        return "just now"
    if seconds < 0:
        return f"in {duration_text(seconds)} (clock ahead of the monitor)"
    return f"{duration_text(seconds)} ago"
