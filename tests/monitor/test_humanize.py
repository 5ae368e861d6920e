"""humanize: sizes, spans and ages as the pages and the alarms say them."""

from __future__ import annotations

import pytest

from clusterwatch.monitor.core.humanize import age_text, duration_text, size_text


@pytest.mark.parametrize(("seconds", "text"), [
    (0, "just now"), (45, "45 s ago"), (60, "1 min ago"), (25 * 60 + 59, "25 min ago"),
    (3 * 3600 + 5 * 60, "3 h 5 min ago"), (7200, "2 h ago"), (50 * 3600, "2 d 2 h ago"),
    (58 * 86400, "58 d ago"),
])
def test_it_says_ages_in_the_two_largest_units(seconds: float, text: str) -> None:
    assert age_text(seconds) == text


def test_it_says_when_a_time_is_ahead_of_the_monitors_clock() -> None:
    assert age_text(-120) == "in 2 min (clock ahead of the monitor)"
    assert duration_text(-3700) == "1 h 1 min"


@pytest.mark.parametrize(("num_bytes", "text"), [
    (0, "0 B"), (512, "512 B"), (1023, "1023 B"), (1024, "1.0 KiB"), (1536, "1.5 KiB"),
    (7421703782, "6.9 GiB"), (5 * 2**50, "5.0 PiB"), (3 * 2**60, "3072.0 PiB"),
])
def test_it_says_sizes_in_binary_units_up_to_pib(num_bytes: int, text: str) -> None:
    assert size_text(num_bytes) == text


def test_it_stops_at_the_largest_unit_asked_for() -> None:
    assert size_text(5 * 2**50, largest="TiB") == "5120.0 TiB"
    assert size_text(2**40, largest="TiB") == "1.0 TiB"
    assert size_text(2000, largest="B") == "2000 B"
