"""Arithmetic over the points of one job's series: sums across nodes, counter increases,
rates and totals (resets counted as Prometheus counts them), peaks.

Pure functions over (time, value) tuples; the series of one query share the evaluation grid,
so points of different nodes meet at equal times.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from typing import Optional

from clusterwatch.monitor.usage.metrics.prometheus_api import Point, Series


def sum_by_time(series: Iterable[Sequence[Point]]) -> tuple[Point, ...]:
    """One point per time: the sum of every series' value at that time."""
    totals: dict[float, float] = defaultdict(float)
    for points in series:
        for at, value in points:
            totals[at] += value
    return tuple(sorted(totals.items()))


def increases(points: Sequence[Point]) -> tuple[Point, ...]:
    """How much a counter grew between consecutive points, at the later time."""
    return tuple((t1, grown) for _, t1, grown in _steps(points))


def rate(points: Sequence[Point]) -> tuple[Point, ...]:
    """Per-second increase of a counter between consecutive points, at the later time."""
    return tuple((t1, grown / (t1 - t0)) for t0, t1, grown in _steps(points))


# A counter that falls by at most this part of its value did not reset: the store rounded
# it. VictoriaMetrics compresses each block of samples to a common decimal scale, so a flat
# counter may read lower in its last digits in one block than in the next; read as a reset,
# that doubled a finished job's CPU time. A true reset starts again from zero.
ROUNDING = 1e-6


def _steps(points: Sequence[Point]) -> Iterator[tuple[float, float, float]]:
    # A decrease is a reset (an exporter restart, a re-created cgroup: the counter starts
    # again from zero), so the new value is the increase, as Prometheus' increase() and
    # rate() count it. A store's rounding (ROUNDING) is no growth, and the value before it
    # stays the reference until the counter passes it again: a rounded point counts nothing
    # twice, and falls that add up to more than a rounding are a reset. The one reading of
    # counters that the figures and the plots share.
    held: Optional[float] = None  # the value a rounded point fell from
    for (t0, v0), (t1, v1) in zip(points, points[1:]):
        if t1 <= t0:
            continue
        before = v0 if held is None else held
        if v1 >= before:
            held = None
            yield t0, t1, v1 - before
        elif before - v1 <= ROUNDING * before:
            held = before
            yield t0, t1, 0.0
        else:
            held = None
            yield t0, t1, v1


def cumulative(points: Sequence[Point]) -> tuple[Point, ...]:
    """A counter's running total since the job's start, resets counted as increase() does.

    The job's counters start with it (its cgroup is new), so the first point is what the job
    had used by then; the last point is the job's total.
    """
    if not points:
        return ()
    at, total = points[0]
    running = [(at, total)]
    for at, grown in increases(points):
        total += grown
        running.append((at, total))
    return tuple(running)


def counter_total(series: Iterable[Series]) -> float:
    """A job's total from its per-node counters: the sum of each one's cumulative total."""
    return sum(cumulative(s.points)[-1][1] for s in series if s.points)


def peak(points: Sequence[Point]) -> float:
    return max((value for _, value in points), default=0.0)


def mean(points: Sequence[Point]) -> float:
    return sum(value for _, value in points) / len(points) if points else 0.0
