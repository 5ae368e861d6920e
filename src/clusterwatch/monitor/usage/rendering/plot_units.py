"""The units a usage plot's axes are drawn in, chosen from the largest value shown.

A plot of a 4 GiB request says GiB, one of a 300 MiB job says MiB: the numbers on the axis
stay readable and the label always names the unit. Pure arithmetic, shared by the plots and
their tests.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

BINARY_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")


@dataclass(frozen=True)
class Scale:
    """Shown value = base value x `factor`; `unit` is what the axis label names."""

    factor: float
    unit: str


# The largest value shown (in base units) -> its scale.
Scaler = Callable[[float], Scale]


def fixed(factor: float, unit: str) -> Scaler:
    """The same scale whatever the values: CPUs, percent, counts."""
    scale = Scale(factor, unit)
    return lambda _largest: scale


def binary_bytes(largest: float) -> Scale:
    """B, KiB, ... EiB: the largest unit in which the largest value is at least 1."""
    return _binary(largest, "")


def binary_bytes_per_second(largest: float) -> Scale:
    return _binary(largest, "/s")


def cpu_time(largest: float) -> Scale:
    """CPU-seconds, -minutes or -hours; a week on 16 CPUs is 2,688 CPU-hours, not 9.7 million."""
    if not math.isfinite(largest) or largest < 600:
        return Scale(1.0, "CPU-seconds")
    if largest < 36_000:
        return Scale(1 / 60, "CPU-minutes")
    return Scale(1 / 3600, "CPU-hours")


def elapsed(span_s: float) -> Scale:
    """The time axis: seconds for a job of two minutes or less, minutes up to three hours,
    hours beyond (a 7-day job reads 0 to 168 h)."""
    if not math.isfinite(span_s) or span_s <= 120:
        return Scale(1.0, "seconds")
    if span_s <= 3 * 3600:
        return Scale(1 / 60, "minutes")
    return Scale(1 / 3600, "hours")


def _binary(largest: float, suffix: str) -> Scale:
    power = 0
    if math.isfinite(largest) and largest >= 1024:
        power = min(int(math.log(largest, 1024)), len(BINARY_UNITS) - 1)
        # log() can round up just below a power of 1024 (1024**3 - 1 -> 3.0).
        if 1024 ** power > largest:
            power -= 1
    return Scale(1 / 1024 ** power, BINARY_UNITS[power] + suffix)
