"""notify.silences under hostile input and hostile clocks: control characters in a comment
or an author, a duration of thousands of digits (past what int() converts), weekly windows
across Europe/Zurich's daylight saving changes."""

from __future__ import annotations

import datetime as dt

import pytest

from clusterwatch.errors import ConfigError
from clusterwatch.notify.silences import (
    SilenceError,
    new_silence,
    parse_duration,
    parse_matcher,
    parse_windows,
)

NOW = 1_800_000_000.0
MATCHERS = (parse_matcher("node:wn1*", ("node",)),)


@pytest.mark.parametrize("comment", ["PDU\x00swap", "PDU \x1b[2J swap", "PDU\x7f", "\u202eswap"])
def test_a_comment_with_control_characters_is_refused(comment: str) -> None:
    with pytest.raises(SilenceError, match="printable"):
        new_silence(MATCHERS, NOW, NOW + 3600, comment, "alice", NOW)


def test_newlines_and_tabs_in_a_comment_become_spaces() -> None:
    made = new_silence(MATCHERS, NOW, NOW + 3600, "PDU\nswap\tnow", "alice", NOW)
    assert made.comment == "PDU swap now"


def test_control_characters_are_left_out_of_an_author() -> None:
    made = new_silence(MATCHERS, NOW, NOW + 3600, "swap", "ev\x1b[2Jil\x00", NOW)
    assert made.author == "ev[2Jil"
    assert new_silence(MATCHERS, NOW, NOW + 3600, "swap", "\x1b\x00", NOW).author == "unknown"


@pytest.mark.parametrize("text", ["9" * 5000 + "m", "1" * 41, " " * 50 + "2h"])
def test_a_duration_of_a_wall_of_digits_is_a_silence_error(text: str) -> None:
    with pytest.raises(SilenceError, match="is not like 90m"):
        parse_duration(text)


def test_a_weekly_window_of_a_wall_of_digits_is_a_configuration_error() -> None:
    with pytest.raises(ConfigError, match=r"maintenance\[0\]\.duration"):
        parse_windows([{"comment": "x", "matchers": ["node:a"], "day": "sun", "time": "02:30",
                        "duration": "9" * 5000 + "h"}], ("node",))


def _utc(year: int, month: int, day: int, hour: int, minute: int) -> float:
    return dt.datetime(year, month, day, hour, minute, tzinfo=dt.timezone.utc).timestamp()


def test_a_weekly_window_in_the_spring_forward_gap_opens_and_lasts_its_duration() -> None:
    # 2027-03-28, Europe/Zurich: 02:00 CET becomes 03:00 CEST; 02:30 does not exist and is
    # read with the offset before the change (01:30Z), the window lasting its 2 h from there.
    (window,) = parse_windows([{"comment": "reboots", "matchers": ["node:wn1*"], "day": "sun",
                                "time": "02:30", "duration": "2h",
                                "zone": "Europe/Zurich"}], ("node",))
    assert window.open_at(_utc(2027, 3, 28, 1, 29)) is None
    assert window.open_at(_utc(2027, 3, 28, 1, 30)) == (_utc(2027, 3, 28, 1, 30),
                                                        _utc(2027, 3, 28, 3, 30))
    assert window.open_at(_utc(2027, 3, 28, 3, 30)) is None
    # The week after, 02:30 CEST again.
    assert window.open_at(_utc(2027, 4, 4, 0, 30)) == (_utc(2027, 4, 4, 0, 30),
                                                       _utc(2027, 4, 4, 2, 30))


def test_a_weekly_window_at_the_repeated_hour_of_autumn_opens_once() -> None:
    # 2027-10-31: 02:30 happens twice (CEST, then CET); the window opens at the first.
    (window,) = parse_windows([{"comment": "reboots", "matchers": ["node:wn1*"], "day": "sun",
                                "time": "02:30", "duration": "2h",
                                "zone": "Europe/Zurich"}], ("node",))
    assert window.open_at(_utc(2027, 10, 31, 0, 30)) == (_utc(2027, 10, 31, 0, 30),
                                                         _utc(2027, 10, 31, 2, 30))
    assert window.open_at(_utc(2027, 10, 31, 2, 30)) is None
