"""Counters that reset during a job (issue 19 item 15): read as Prometheus' increase() reads
them, by the one set of functions (usage/analysis/timeseries.py) that the figures and the
plots share, so a job's CPU efficiency and its CPU plots say the same."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from clusterwatch.monitor.usage.analysis.figures import analyse
from clusterwatch.monitor.usage.analysis.rules import check
from clusterwatch.monitor.usage.analysis.timeseries import (
    counter_total,
    cumulative,
    increases,
    rate,
)
from clusterwatch.monitor.usage.metrics.prometheus_api import Series
from clusterwatch.monitor.usage.rendering.plot_metrics import METRICS, metric_curves
from tests.monitor.usage.usage_support import HOUR, good_series, one, record

BUSY = 3.6  # CPUs busy of 4: 90 %


def restarting(*resets: float, busy: float = BUSY) -> Series:
    """A CPU counter that restarts from 0 at each of `resets` (seconds since the start)."""
    return one(lambda s: busy * (s - max((r for r in resets if r <= s), default=0.0)))


def test_a_decrease_is_a_restart_from_zero() -> None:
    points = ((0.0, 10.0), (30.0, 40.0), (60.0, 5.0), (90.0, 35.0))
    assert increases(points) == ((30.0, 30.0), (60.0, 5.0), (90.0, 30.0))
    assert rate(points) == ((30.0, 1.0), (60.0, 5 / 30), (90.0, 1.0))
    assert cumulative(points) == ((0.0, 10.0), (30.0, 40.0), (60.0, 45.0), (90.0, 75.0))
    assert counter_total([Series({}, points)]) == 75.0


def test_a_flat_counter_a_store_rounded_lower_did_not_reset() -> None:
    # VictoriaMetrics gave a finished job's CPU counter back one rounding lower in one block
    # than in the next (CI, 2026-12-07): read as a reset, the job's CPU time came out doubled.
    final = 24.518577645
    rounded = math.nextafter(math.nextafter(final, 0.0), 0.0)
    points = ((0.0, 20.0), (30.0, final), (60.0, rounded), (90.0, final), (120.0, final))
    assert counter_total([Series({}, points)]) == pytest.approx(final, rel=1e-12)
    assert all(value <= final * (1 + 1e-12) for _, value in cumulative(points))
    assert max(r for _, r in rate(points)) == pytest.approx((final - 20.0) / 30.0)
    # A job that did its work, then sat at its total until it ended: its figures are what
    # it did, not twice that.
    job = record(cpus_allocated=2)
    flat = one(lambda s: 0.9 * min(s, HOUR - 600.0))
    dip = len(flat.points) - 3
    at, value = flat.points[dip]
    dipped = Series(flat.labels, (*flat.points[:dip], (at, value * (1 - 1e-12)),
                                  *flat.points[dip + 1:]))
    expected = analyse(job, good_series(cpu_seconds=[flat]))
    summary = analyse(job, good_series(cpu_seconds=[dipped]))
    assert summary.cpu_used_s == pytest.approx(expected.cpu_used_s, rel=1e-9)
    assert summary.cpu_efficiency == pytest.approx(expected.cpu_efficiency, rel=1e-9)


def test_rounded_points_count_nothing_twice_and_falls_that_add_up_are_a_reset() -> None:
    # A flat counter rounded lower at every other point: its total, not one rounding more
    # for each time it came back.
    flat = tuple((30.0 * n, 100.0 * (1 - 1e-7 * (n % 2))) for n in range(1000))
    assert counter_total([Series({}, flat)]) == 100.0
    assert sum(grown for _, grown in increases(flat)) == 0.0
    # Falls of less than a rounding each, but more together, are a reset from the last
    # value the counter reached.
    sinking = tuple((30.0 * n, 100.0 * (1 - 9e-7 * n)) for n in range(4))
    assert [grown for _, grown in increases(sinking)] == [0.0, sinking[2][1], 0.0]


@pytest.mark.parametrize("fallen_to", [0.0, 0.5, 0.999 * 100.0])
def test_a_fall_of_more_than_a_rounding_is_still_a_reset(fallen_to: float) -> None:
    points = ((0.0, 90.0), (30.0, 100.0), (60.0, fallen_to), (90.0, fallen_to + 1.0))
    assert increases(points) == ((30.0, 10.0), (60.0, fallen_to), (90.0, 1.0))
    assert counter_total([Series({}, points)]) == pytest.approx(100.0 + fallen_to + 1.0)


def test_points_out_of_order_or_repeated_are_skipped_alike() -> None:
    points = ((0.0, 1.0), (30.0, 2.0), (30.0, 9.0), (20.0, 3.0), (60.0, 4.0))
    assert [at for at, _ in increases(points)] == [at for at, _ in rate(points)] == [30.0, 60.0]


@pytest.mark.parametrize(
    "resets",
    [(1810.0,), (40.0,), (905.0, 2710.0), ()],
    ids=["in the middle", "at the start", "twice", "never"],
)
def test_a_job_90_percent_busy_is_90_percent_efficient_whatever_its_counter_did(
    resets: tuple[float, ...],
) -> None:
    job = record(cpus_allocated=4)
    series = good_series(cpu_seconds=[restarting(*resets)])
    summary = analyse(job, series)
    # Each reset loses what ran between the scrape before it and the reset (at most 10 s).
    assert summary.cpu_efficiency == pytest.approx(0.90, abs=0.005)
    assert summary.cores_used_mean == pytest.approx(BUSY, abs=0.02)
    assert "low_cpu_efficiency" not in {w.code for w in check(job, summary)}
    # The plots draw what the figures say: CPUs busy on average, and the CPU time's total.
    (busy,) = metric_curves(METRICS["cpu"], series)
    assert sum(v for _, v in busy.points) / len(busy.points) == summary.cores_used_mean
    total = metric_curves(METRICS["cpu_time"], series)[0]
    assert total.label == "total" and total.points[-1][1] == summary.cpu_used_s
    assert all(b[1] >= a[1] for a, b in zip(total.points, total.points[1:]))


def test_user_system_and_per_cpu_time_are_read_reset_aware_too() -> None:
    series = good_series(
        cpu_user_seconds=[restarting(1810.0, busy=1.9)],
        cpu_system_seconds=[restarting(1810.0, busy=0.05)],
        core_seconds=[restarting(1810.0, busy=0.98)],
    )
    summary = analyse(record(), series)
    assert summary.cpu_user_s == pytest.approx(1.9 * (HOUR - 10), rel=1e-6)
    assert summary.cpu_system_s == pytest.approx(0.05 * (HOUR - 10), rel=1e-6)
    assert summary.core_seconds[0].cpu_s == pytest.approx(0.98 * (HOUR - 10), rel=1e-6)


def test_each_node_resets_on_its_own() -> None:
    series = good_series(
        cpu_seconds=[restarting(1810.0, busy=1.8), one(lambda s: 1.8 * s, node="node02")]
    )
    summary = analyse(record(cpus_allocated=4, nodes=2), series)
    assert summary.cpu_used_s == pytest.approx(1.8 * (HOUR - 10) + 1.8 * HOUR)


counters = st.lists(st.floats(min_value=0, max_value=1e6, allow_nan=False), min_size=1, max_size=40)


@given(counters)
def test_the_total_is_the_first_value_plus_every_increase(values: list[float]) -> None:
    points = tuple((30.0 * i, v) for i, v in enumerate(values))
    running = cumulative(points)
    assert running[-1][1] == pytest.approx(values[0] + sum(g for _, g in increases(points)))
    assert running[-1][1] == pytest.approx(counter_total([Series({}, points)]))
    assert all(g >= 0 for _, g in increases(points))
    assert [r * 30.0 for _, r in rate(points)] == pytest.approx([g for _, g in increases(points)])
