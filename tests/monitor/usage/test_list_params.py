"""The user and staff pages' parameters (usage/web/list_params.py), read strictly: the windows they
make, and every value refused with a message naming the parameter."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from clusterwatch.monitor.usage.web.list_params import BadParameter, staff_query, user_query

NOW = datetime(2026, 11, 29, 15, 30, tzinfo=timezone.utc)
MIDNIGHT = datetime(2026, 11, 29, tzinfo=timezone.utc)


def test_it_defaults_to_the_last_30_days_newest_first() -> None:
    query = user_query({}, NOW)
    assert query.since == NOW - timedelta(days=30) and query.until is None
    assert (query.days, query.states, query.sort, query.order, query.page) == (
        30, (), "start", "desc", 1)


def test_it_reads_dates_as_whole_utc_days_with_until_included() -> None:
    query = user_query({"since": ["2026-11-01"], "until": ["2026-11-10"]}, NOW)
    assert query.since == datetime(2026, 11, 1, tzinfo=timezone.utc)
    assert query.until == datetime(2026, 11, 11, tzinfo=timezone.utc)  # the end of the 10th
    assert query.days is None
    alone = user_query({"until": ["2026-11-10"], "days": ["3"]}, NOW)
    assert alone.since == MIDNIGHT - timedelta(days=30)  # dates replace days
    assert user_query({"since": ["2026-11-29"], "until": ["2026-11-29"]}, NOW).until == \
        MIDNIGHT + timedelta(days=1)


def test_it_clamps_an_until_past_today_to_today() -> None:
    """No job starts after today; the day after 9999-12-31 is past what a datetime holds."""
    for far in ("2026-12-01", "9999-12-31"):
        assert user_query({"until": [far]}, NOW).until == MIDNIGHT + timedelta(days=1)


def test_it_gives_each_column_its_first_order_and_keeps_an_asked_one() -> None:
    assert user_query({"sort": ["cpu_efficiency"]}, NOW).order == "asc"
    assert user_query({"sort": ["memory_peak"]}, NOW).order == "desc"
    assert user_query({"sort": ["memory_peak"], "order": ["asc"]}, NOW).order == "asc"


def test_it_keeps_each_state_once_and_drops_the_empty_any_state() -> None:
    query = user_query({"state": ["FAILED", "", "TIMEOUT", "FAILED"]}, NOW)
    assert query.states == ("FAILED", "TIMEOUT")


@pytest.mark.parametrize(("params", "message"), [
    ({"days": ["0"]}, "days must be a whole number from 1 to 366"),
    ({"days": ["367"]}, "days must be a whole number from 1 to 366"),
    ({"days": ["1e3"]}, "days must be a whole number"),
    ({"days": ["٣"]}, "days must be a whole number"),  # a digit, but not 0-9
    ({"days": ["1", "2"]}, "days is given 2 times"),
    ({"since": ["29/11/2026"]}, "since must be a date like 2026-11-29"),
    ({"since": ["2025-11-27"]}, "since must be within the last 366 days"),
    ({"since": ["2026-11-30"]}, "since is in the future"),
    ({"since": ["2026-11-10"], "until": ["2026-11-09"]}, "until must not be before since"),
    ({"until": ["x" * 500]}, "until must be a date like 2026-11-29, not 'xxxxxxxx"),
    ({"until": ["2026-02-30"]}, "until must be a date like 2026-11-29, not '2026-02-30'"),
    ({"since": ["2026-13-01"]}, "since must be a date like 2026-11-29"),
    ({"since": ["2026-W48-1"]}, "since must be a date like 2026-11-29"),  # a week date
    ({"until": ["20261129"]}, "until must be a date like 2026-11-29"),
    ({"until": ["\uff12\uff10\uff12\uff16-11-29"]}, "until must be a date like 2026-11-29"),
    ({"state": ["running"]}, "not a job state: 'running'"),
    ({"state": ["A" * 33]}, "not a job state"),
    ({"sort": ["__class__"]}, "sort must be one of jobid, name"),
    ({"order": ["ASC"]}, "order must be asc or desc"),
    ({"page": ["0"]}, "page must be a whole number from 1"),
    ({"page": ["9999999"]}, "page must be a whole number from 1"),
])
def test_it_refuses_what_the_page_does_not_offer(params: dict[str, list[str]],
                                                 message: str) -> None:
    with pytest.raises(BadParameter) as refused:
        user_query(params, NOW)
    assert str(refused.value).startswith(message)
    assert len(str(refused.value)) < 200


def test_it_reads_the_staff_pages_parameters() -> None:
    query = staff_query({}, NOW)
    assert (query.days, query.sort, query.warning) == (7, "cpu_efficiency", None)
    assert query.since == NOW - timedelta(days=7)
    asked = staff_query({"days": ["30"], "sort": ["memory_efficiency"],
                         "warning": ["idle_gpu"]}, NOW)
    assert (asked.days, asked.sort, asked.warning) == (30, "memory_efficiency", "idle_gpu")
    for params in ({"sort": ["start"]}, {"warning": ["idle gpu"]}, {"days": ["-1"]}):
        with pytest.raises(BadParameter):
            staff_query(params, NOW)
