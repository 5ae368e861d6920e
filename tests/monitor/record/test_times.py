"""record.times.parse_utc: the fast path for the reporter's form answers as strptime does."""

from __future__ import annotations

import datetime as dt
from typing import Any, Optional

import pytest
from hypothesis import given
from hypothesis import strategies as st

from clusterwatch.monitor.record.times import parse_utc

UTC = dt.timezone.utc


def _by_strptime(text: Any) -> Optional[dt.datetime]:
    """The reference: what parse_utc answered before its fast path."""
    if not isinstance(text, str):
        return None
    try:
        value = dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        try:
            value = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def _field(digits: int) -> st.SearchStrategy[str]:
    return st.text(alphabet="0123456789", min_size=digits, max_size=digits)


# The schema's form with any digits: real times, month 13, day 31 of a short month, hour
# 24, second 60, year 0000.
REPORTER_FORM = st.builds(lambda y, mo, d, h, mi, s: f"{y}-{mo}-{d}T{h}:{mi}:{s}Z",
                          _field(4), _field(2), _field(2), _field(2), _field(2), _field(2))


@given(REPORTER_FORM)
def test_it_agrees_with_strptime_on_the_reporters_form(text: str) -> None:
    assert parse_utc(text) == _by_strptime(text)


@given(st.text(alphabet="0123456789-T:Z+. ", max_size=26) | st.text(max_size=22))
def test_it_agrees_with_strptime_on_any_text(text: str) -> None:
    assert parse_utc(text) == _by_strptime(text)


@pytest.mark.parametrize(("text", "expected"), [
    ("2026-10-02T18:27:05Z", dt.datetime(2026, 10, 2, 18, 27, 5, tzinfo=UTC)),
    ("2024-02-29T00:00:00Z", dt.datetime(2024, 2, 29, tzinfo=UTC)),
    ("2026-10-02T18:27:05+02:00", dt.datetime(2026, 10, 2, 16, 27, 5, tzinfo=UTC)),
    ("2026-1-2T3:4:5Z", dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)),  # strptime's leniency
    ("2025-02-29T00:00:00Z", None),
    ("2026-13-01T00:00:00Z", None),
    ("2026-10-02T18:27:60Z", None),
    ("0000-01-01T00:00:00Z", None),
    ("٢٠٢٦-10-02T18:27:05Z", _by_strptime("٢٠٢٦-10-02T18:27:05Z")),  # other digits: slow path
    ("", None),
    (None, None),
    (20261002, None),
])
def test_it_reads_utc_times(text: Any, expected: Optional[dt.datetime]) -> None:
    value = parse_utc(text)
    assert value == expected
    if value is not None:
        assert value.tzinfo is UTC
