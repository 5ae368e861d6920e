"""Arithmetic over the points of one job's series: sums across nodes, counter rates, peaks.

Pure functions over (time, value) tuples; the series of one query share the evaluation grid,
so points of different nodes meet at equal times.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

from clusterwatch.monitor.usage.prometheus_api import Point, Series


def sum_by_time(series: Iterable[Sequence[Point]]) -> tuple[Point, ...]:
    """One point per time: the sum of every series' value at that time."""
    totals: dict[float, float] = defaultdict(float)
    for points in series:
        for at, value in points:
            totals[at] += value
    return tuple(sorted(totals.items()))


def last_total(series: Iterable[Series]) -> float:
    """The sum of each series' last value: a job's total from its per-node counters."""
    return sum(s.points[-1][1] for s in series if s.points)


def rate(points: Sequence[Point]) -> tuple[Point, ...]:
    """Per-second increase of a counter between consecutive points, at the later time.

    A decrease is a reset (a restarted node's counter starts again from zero): the new
    value is the increase, as Prometheus' rate() counts it.
    """
    rates = []
    for (t0, v0), (t1, v1) in zip(points, points[1:]):
        if t1 <= t0:
            continue
        increase = v1 - v0 if v1 >= v0 else v1
        rates.append((t1, increase / (t1 - t0)))
    return tuple(rates)


def peak(points: Sequence[Point]) -> float:
    return max((value for _, value in points), default=0.0)


def mean(points: Sequence[Point]) -> float:
    return sum(value for _, value in points) / len(points) if points else 0.0
