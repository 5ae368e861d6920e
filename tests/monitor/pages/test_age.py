from __future__ import annotations

import datetime as dt

import pytest

from clusterwatch.monitor.core.stamps import is_stale, stamp

NOW = dt.datetime(2026, 10, 2, 18, 31, 5, tzinfo=dt.timezone.utc)


def test_it_shows_utc_with_the_age() -> None:
    shown = stamp("2026-10-02T18:27:05Z", NOW)
    assert shown is not None
    assert str(shown) == "2026-10-02 18:27:05Z, 4 min ago"
    assert shown.iso == "2026-10-02T18:27:05Z" and shown.age_s == 240


def test_it_converts_an_aware_datetime_in_another_zone_to_utc() -> None:
    eastern = dt.timezone(dt.timedelta(hours=-4))
    shown = stamp(dt.datetime(2026, 10, 2, 14, 23, 0, tzinfo=eastern), NOW)
    assert shown is not None and shown.utc == "2026-10-02 18:23:00Z"


@pytest.mark.parametrize("bad", [None, "", "yesterday", 12345, "2026-13-40T99:00:00Z"])
def test_it_gives_no_stamp_for_a_missing_or_unreadable_time(bad: object) -> None:
    assert stamp(bad, NOW) is None


def test_it_calls_a_record_stale_after_three_intervals() -> None:
    at_limit = stamp(NOW - dt.timedelta(seconds=900), NOW)
    past_limit = stamp(NOW - dt.timedelta(seconds=901), NOW)
    assert not is_stale(at_limit, 300)
    assert is_stale(past_limit, 300)
    assert is_stale(None, 300)
    assert not is_stale(stamp(NOW + dt.timedelta(minutes=2), NOW), 300)


def test_it_prints_a_stamp_as_a_time_element_for_templates() -> None:
    shown = stamp("2026-10-02T18:27:05Z", NOW)
    assert shown is not None
    assert shown.html == ('<time datetime="2026-10-02T18:27:05Z">2026-10-02 18:27:05Z</time>, '
                          '<span class="age">4 min ago</span>')
