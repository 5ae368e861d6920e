"""reporter_stale follows the record's own interval (`interval.expected_s`, telemetry 1.3): a
host run every minute is stale after three minutes, not after three configured intervals."""

from __future__ import annotations

from typing import Optional

import pytest

from clusterwatch.monitor.alarms.observation import AlarmState, RuleSettings
from clusterwatch.monitor.alarms.rules import KeyFacts, observe_key
from clusterwatch.monitor.record.host_record import parse_record
from tests.monitor.alarms.support import T0, make_record, volume

KEY = "pandaharvester01"
STALE = f"reporter_stale:{KEY}"
SETTINGS = RuleSettings(report_interval_s=300, stale_after_intervals=3)


def facts(age: float, expected_s: Optional[object]) -> KeyFacts:
    record = make_record(collected_at=T0 - age, volumes={"/": volume(10.0)})
    if expected_s is not None:
        record["interval"]["expected_s"] = expected_s
    return KeyFacts(KEY, parse_record(record), T0 - age)


def test_it_calls_a_minutely_host_stale_after_three_of_its_minutes() -> None:
    assert observe_key(facts(180.0, 60), T0, SETTINGS)[STALE].state is AlarmState.CLEAR
    stale = observe_key(facts(181.0, 60), T0, SETTINGS)[STALE]
    assert stale.state is AlarmState.FIRING
    assert "stale after 3 min)" in stale.detail


def test_it_waits_longer_for_a_host_that_says_it_runs_less_often() -> None:
    assert observe_key(facts(1700.0, 600), T0, SETTINGS)[STALE].state is AlarmState.CLEAR
    assert observe_key(facts(1801.0, 600), T0, SETTINGS)[STALE].state is AlarmState.FIRING


@pytest.mark.parametrize("expected_s", [None, 0, -60, "60", 1.5e300, True])
def test_it_takes_the_configured_interval_when_the_record_states_none_usable(
        expected_s: Optional[object]) -> None:
    assert observe_key(facts(900.0, expected_s), T0, SETTINGS)[STALE].state is AlarmState.CLEAR
    assert observe_key(facts(901.0, expected_s), T0, SETTINGS)[STALE].state is AlarmState.FIRING
