"""Matchers, durations, times, silences and maintenance windows (notify/silences.py)."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from clusterwatch.errors import ConfigError
from clusterwatch.notify import silences as s
from clusterwatch.toml_file import tomllib

KINDS = ("node", "gpu")
T0 = 1_796_000_000.0  # 2026-11-30 01:33:20Z, a Monday


def m(text: str, kinds: tuple[str, ...] = ("node", "gpu", "queue", "key")) -> s.Matcher:
    return s.parse_matcher(text, kinds)


def test_a_matcher_is_a_kind_and_a_glob_and_gpu_addresses_keep_their_colons() -> None:
    matcher = s.parse_matcher("gpu:10.1.2.*:9100", KINDS)
    assert (matcher.kind, matcher.pattern, str(matcher)) == ("gpu", "10.1.2.*:9100",
                                                           "gpu:10.1.2.*:9100")
    assert matcher.matches("10.1.2.7:9100")
    assert not matcher.matches("10.1.3.7:9100")
    assert not matcher.matches("10.1.2.7:9101")
    assert s.parse_matcher("node:WN1", KINDS).matches("WN1")
    assert not s.parse_matcher("node:wn1", KINDS).matches("WN1")  # case matters, as names do


@pytest.mark.parametrize("text, says", [
    ("wn1*", "is not KIND:PATTERN"),
    (":wn1", "is not KIND:PATTERN"),
    ("Node:wn1", "is not KIND:PATTERN"),
    ("host:wn1", "unknown kind 'host' (one of gpu, node)"),
    ("node:", "empty pattern"),
    ("node: wn1", "printable, without spaces"),
    ("node:wn1\x00", "printable"),
    ("node:wn\n1", "printable"),
    ("node:" + "x" * 301, "at most 300"),
])
def test_a_malformed_matcher_is_refused_in_one_line(text: str, says: str) -> None:
    with pytest.raises(s.SilenceError) as caught:
        s.parse_matcher(text, KINDS)
    assert says in str(caught.value)
    assert "\n" not in str(caught.value)
    assert len(str(caught.value)) < 200


@pytest.mark.parametrize("text, seconds", [
    ("90m", 5400), ("2h", 7200), ("3d", 259200), ("1w", 604800), ("1h30m", 5400), ("45s", 45),
    (" 2h ", 7200), ("1d2h3m4s", 93784),
])
def test_durations(text: str, seconds: float) -> None:
    assert s.parse_duration(text) == seconds
    assert s.parse_duration(s.span(seconds)) == seconds


@pytest.mark.parametrize("text, says", [
    ("0m", "not positive"), ("0h0m", "not positive"), ("", "not like"), ("-5m", "not like"),
    ("2 h", "not like"), ("1.5h", "not like"), ("m", "not like"), ("367d", "longer than 366"),
    ("2h1d", "not like"), ("99999999999999999999w", "longer than 366"),
])
def test_bad_durations(text: str, says: str) -> None:
    with pytest.raises(s.SilenceError, match=says):
        s.parse_duration(text)


def test_times_need_a_zone() -> None:
    assert s.parse_time("2026-12-10T08:00:00Z") == dt.datetime(
        2026, 12, 10, 8, tzinfo=dt.timezone.utc).timestamp()
    assert s.parse_time("2026-12-10 09:00+01:00") == s.parse_time("2026-12-10T08:00Z")
    with pytest.raises(s.SilenceError, match="has no zone"):
        s.parse_time("2026-12-10T08:00:00")
    with pytest.raises(s.SilenceError, match="not ISO 8601"):
        s.parse_time("next tuesday")
    with pytest.raises(s.SilenceError, match="not ISO 8601"):
        s.parse_time("")


def test_matchers_of_one_kind_are_alternatives_and_kinds_must_all_hold() -> None:
    facts = {"key": ["pandaharvester01"], "queue": ["BNL_PROD", "CERN_TEST"]}
    assert s.matches([m("key:panda*")], facts)
    assert s.matches([m("queue:CERN_*"), m("queue:NOPE")], facts)  # any of one kind
    assert s.matches([m("key:panda*"), m("queue:BNL_*")], facts)  # every kind
    assert not s.matches([m("key:panda*"), m("queue:FNAL_*")], facts)
    assert not s.matches([m("node:*")], facts)  # no kind of the silence's is the target's
    assert not s.matches([], facts)
    # A kind the target does not have is not about it; one it has with no value fails.
    assert s.matches([m("key:panda*"), m("node:wn1")], facts)
    assert not s.matches([m("key:panda*"), m("queue:*")], {"key": ["pandaharvester01"],
                                                          "queue": []})
    node, gpu = {"node": ["wn12a"]}, {"gpu": ["10.1.12.4:9100"]}
    both = [m("node:wn12*"), m("gpu:10.1.12.*")]
    assert s.matches(both, node) and s.matches(both, gpu)
    assert not s.matches(both, {"node": ["wn13"]})


def silence(**overrides: object) -> s.Silence:
    fields: dict[str, object] = dict(matchers=[m("node:wn1*")], starts_at=T0, ends_at=T0 + 3600,
                                     comment="swap PSU", author="alice", now=T0)
    fields.update(overrides)
    return s.new_silence(**fields)  # type: ignore[arg-type]


def test_a_silence_covers_its_targets_from_its_start_until_its_end_or_expiry() -> None:
    made = silence()
    assert len(made.id) == 12 and made.id != silence().id
    assert not made.covers({"node": ["wn1"]}, T0 - 1)
    assert made.covers({"node": ["wn1"]}, T0)
    assert made.covers({"node": ["wn12"]}, T0 + 3599)
    assert not made.covers({"node": ["wn1"]}, T0 + 3600)
    assert not made.covers({"node": ["wn2"]}, T0 + 10)
    expired = made.expire(T0 + 60)
    assert expired.ended_at == T0 + 60
    assert not expired.covers({"node": ["wn1"]}, T0 + 60)
    with pytest.raises(s.SilenceError, match="already ended"):
        expired.expire(T0 + 61)


@pytest.mark.parametrize("overrides, says", [
    (dict(matchers=[]), "at least one matcher"),
    (dict(comment="  \n "), "needs a comment"),
    (dict(comment="x" * 501), "longer than 500"),
    (dict(ends_at=T0), "end after it starts"),
    (dict(starts_at=T0 - 7200, ends_at=T0 - 3600), "already have ended"),
    (dict(ends_at=T0 + 367 * 86400), "at most 366 days"),
])
def test_a_silence_that_cannot_be_is_refused(overrides: dict[str, object], says: str) -> None:
    with pytest.raises(s.SilenceError, match=says):
        silence(**overrides)


def test_a_silence_round_trips_and_damaged_data_is_refused() -> None:
    made = silence(author="  bob \t smith ").expire(T0 + 5)
    assert made.author == "bob smith"
    assert s.Silence.from_json(made.to_json()) == made
    damages: tuple[dict[str, object], ...] = (
        {"id": "xyz"}, {"matchers": []}, {"matchers": ["nocolon"]}, {"ends_at": "soon"},
        {"starts_at": float("nan")}, {"comment": None}, {"expired_at": True})
    for damage in damages:
        data = {**made.to_json(), **damage}
        with pytest.raises(ValueError):
            s.Silence.from_json(data)
    with pytest.raises(ValueError):
        s.Silence.from_json(["not", "an", "object"])


def test_ended_silences_are_kept_a_week_for_the_record() -> None:
    ended = silence().expire(T0 + 10)
    running = silence(ends_at=T0 + 30 * 86400)
    assert s.prune([ended, running], T0 + 10 + s.KEEP_ENDED_S - 1) == [ended, running]
    assert s.prune([ended, running], T0 + 10 + s.KEEP_ENDED_S) == [running]


def windows(text: str, kinds: tuple[str, ...] = KINDS) -> tuple[s.Window, ...]:
    return s.parse_windows(tomllib.loads(text)["maintenance"], kinds)


def test_a_one_off_window_from_toml_datetimes_or_strings() -> None:
    [native, string] = windows("""
[[maintenance]]
comment = "rack 12 power work"
matchers = ["node:wn12*", "gpu:10.1.12.*"]
start = 2026-12-10T08:00:00Z
end = 2026-12-10T12:00:00+00:00

[[maintenance]]
comment = "same, as text"
matchers = ["node:wn12*"]
start = "2026-12-10T09:00:00+01:00"
end = "2026-12-10T12:00:00Z"
""")
    start = s.parse_time("2026-12-10T08:00Z")
    assert (native.start, native.end) == (string.start, string.end) == (start, start + 4 * 3600)
    assert native.covers({"node": ["wn12a"]}, start)
    assert not native.covers({"node": ["wn12a"]}, start + 4 * 3600)
    assert not native.covers({"node": ["wn13"]}, start + 60)
    assert native.describe() == ("rack 12 power work (node:wn12* gpu:10.1.12.*): "
                                 "2026-12-10 08:00Z to 2026-12-10 12:00Z")


def test_a_weekly_window_in_its_zone_across_midnight_and_daylight_saving() -> None:
    [window] = windows("""
[[maintenance]]
comment = "Tuesday reboots"
matchers = ["node:*"]
day = "Tuesday"
time = "23:00"
duration = "2h"
zone = "Europe/Zurich"
""")
    # 2026-12-01 is a Tuesday; 23:00 in Zurich (winter, +01:00) is 22:00Z.
    start = s.parse_time("2026-12-01T22:00Z")
    assert window.open_at(start - 1) is None
    assert window.open_at(start) == (start, start + 7200)
    assert window.open_at(start + 7199) == (start, start + 7200)  # Wednesday 00:59 local
    assert window.open_at(start + 7200) is None
    assert window.open_at(start + 7 * 86400) == (start + 7 * 86400, start + 7 * 86400 + 7200)
    summer = s.parse_time("2026-07-07T21:00Z")  # a Tuesday, +02:00
    assert window.open_at(summer) == (summer, summer + 7200)
    assert window.describe() == ("Tuesday reboots (node:*): weekly, tue 23:00 Europe/Zurich "
                                 "for 2h")


def test_a_weekly_window_as_long_as_a_week_is_always_open() -> None:
    [window] = windows("""
[[maintenance]]
comment = "decommissioning"
matchers = ["node:old*"]
day = "mon"
time = 00:00:00
duration = "1w"
""")
    for hours in range(0, 24 * 8, 5):
        assert window.open_at(T0 + hours * 3600) is not None


@pytest.mark.parametrize("body, says", [
    ('matchers = ["node:a"]\nstart = 2026-12-10T08:00:00Z\nend = 2026-12-10T09:00:00Z',
     "needs a comment"),
    ('comment = "x"\nstart = 2026-12-10T08:00:00Z\nend = 2026-12-10T09:00:00Z',
     "matchers must be a non-empty list"),
    ('comment = "x"\nmatchers = ["host:a"]\nstart = 2026-12-10T08:00:00Z\n'
     'end = 2026-12-10T09:00:00Z', "unknown kind 'host'"),
    ('comment = "x"\nmatchers = ["node:a"]\nstart = 2026-12-10T08:00:00\n'
     'end = 2026-12-10T09:00:00Z', "has no zone"),
    ('comment = "x"\nmatchers = ["node:a"]\nstart = 2026-12-10T09:00:00Z\n'
     'end = 2026-12-10T08:00:00Z', "end must be after start"),
    ('comment = "x"\nmatchers = ["node:a"]\nstart = 2026-12-10T08:00:00Z',
     "must be a date and time"),
    ('comment = "x"\nmatchers = ["node:a"]\nday = "tue"\ntime = "06:00"', "needs start and end"),
    ('comment = "x"\nmatchers = ["node:a"]\nday = "someday"\ntime = "06:00"\nduration = "2h"',
     "weekday name"),
    ('comment = "x"\nmatchers = ["node:a"]\nday = "tuesdayish"\ntime = "06:00"\n'
     'duration = "2h"', "weekday name"),
    ('comment = "x"\nmatchers = ["node:a"]\nday = "tue"\ntime = "25:00"\nduration = "2h"',
     "time of day"),
    ('comment = "x"\nmatchers = ["node:a"]\nday = "tue"\ntime = "06:00"\nduration = 7200',
     "string like"),
    ('comment = "x"\nmatchers = ["node:a"]\nday = "tue"\ntime = "06:00"\nduration = "8d"',
     "at most 7 days"),
    ('comment = "x"\nmatchers = ["node:a"]\nday = "tue"\ntime = "06:00"\nduration = "2h"\n'
     'zone = "Mars/Olympus"', "not a known time zone"),
    ('comment = "x"\nmatchers = ["node:a"]\nday = "tue"\ntime = "06:00"\nduration = "2h"\n'
     'zone = "../../etc/passwd"', "not a known time zone"),
    ('comment = "x"\nmatchers = ["node:a"]\nday = "tue"\ntime = "06:00"\nduration = "2h"\n'
     'start = 2026-12-10T08:00:00Z', "not both"),
    ('comment = "x"\nmatchers = ["node:a"]\nstart = 2026-12-10T08:00:00Z\n'
     'end = 2026-12-10T09:00:00Z\ncolour = "red"', "unknown key 'colour'"),
])
def test_bad_windows_are_configuration_errors(body: str, says: str) -> None:
    with pytest.raises(ConfigError, match=says) as caught:
        windows("[[maintenance]]\n" + body)
    assert str(caught.value).startswith("maintenance[0]")


def test_windows_must_be_an_array_of_tables() -> None:
    with pytest.raises(ConfigError, match=r"array of tables \(\[\[maintenance\]\]\)"):
        s.parse_windows({"comment": "x"}, KINDS)
    with pytest.raises(ConfigError, match=r"maintenance\[0\] must be a table"):
        s.parse_windows(["x"], KINDS)


def test_the_hold_is_the_covering_silence_or_window_that_ends_last() -> None:
    short = silence(ends_at=T0 + 600, author="alice", comment="reseat card")
    long = silence(ends_at=T0 + 7200, author="bob", comment="replace PSU")
    other = silence(matchers=[m("node:wn2")], ends_at=T0 + 99999)
    [window] = windows("""
[[maintenance]]
comment = "rack work"
matchers = ["node:wn1*"]
start = "2026-11-30T00:00:00Z"
end = "2026-11-30T02:00:00Z"
""")
    facts = {"node": ["wn1"]}
    assert s.hold_for({"node": ["wn9"]}, T0, [short, long, other], [window]) is None
    hold = s.hold_for(facts, T0, [short, long, other], [window])
    assert hold is not None
    assert (hold.by, hold.author, hold.until) == (f"silence {long.id}", "bob", T0 + 7200)
    assert hold.describe() == (f"silenced by bob until {s.utc(T0 + 7200)} "
                               f"(silence {long.id}: replace PSU)")
    only_window = s.hold_for(facts, T0, [short], [window])
    assert only_window is not None
    assert only_window.describe() == ("in maintenance until 2026-11-30 02:00Z (maintenance "
                                      "window 'rack work': rack work)")
    assert s.hold_for(facts, T0 + 7200, [short, long], [window]) is None


@given(st.text(max_size=40))
def test_any_text_is_a_matcher_or_one_silence_error(text: str) -> None:
    try:
        matcher = s.parse_matcher(text, KINDS)
    except s.SilenceError as exc:
        assert "\n" not in str(exc)
    else:
        assert str(matcher) == text


@given(st.text(max_size=20))
def test_any_text_is_a_duration_or_one_silence_error(text: str) -> None:
    try:
        seconds = s.parse_duration(text)
    except s.SilenceError:
        return
    assert 0 < seconds <= s.MAX_SPAN_S
