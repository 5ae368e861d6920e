"""Open, hold and recover decisions (no database)."""

from __future__ import annotations

from typing import Optional

from clusterwatch.monitor.alarms.observation import (
    AlarmState,
    Observation,
    RuleSettings,
)
from clusterwatch.monitor.alarms.rules import KeyFacts, observe_key
from clusterwatch.monitor.alarms.transitions import Change, OpenAlarm, Transition, decide
from clusterwatch.monitor.record.host_record import parse_record
from clusterwatch.notify.incident import ALARM_ID_BYTES, incident_id
from tests.monitor.alarms.support import T0, make_record, volume

DISK = "host_disk_space:pandaharvester01:/data"


def seen(state: str, evidence_at: Optional[float], detail: str = "d") -> dict[str, Observation]:
    return {DISK: Observation(state, "s", detail, evidence_at)}


def opened(evidence_at: Optional[float] = T0, detail: str = "d") -> dict[str, OpenAlarm]:
    return {DISK: OpenAlarm(DISK, "abc123", "s", detail, T0, evidence_at)}


def test_it_opens_an_alarm_on_a_firing_observation() -> None:
    (change,) = decide({}, seen(AlarmState.FIRING, T0, "full"), T0 + 5)
    assert change == Transition(Change.ALERT, DISK, "s", "full",
                                incident_id(DISK, T0 + 5, digest_bytes=ALARM_ID_BYTES), T0)


def test_it_names_the_incident_as_the_alarm_table_and_channels_already_know_it() -> None:
    # 12 hex digits, unlike the pool watch's 8: stored alarms and sent messages keep theirs.
    (change,) = decide({}, seen(AlarmState.FIRING, T0, "full"), T0 + 5)
    assert change.incident == "704251fafff8"


def test_it_holds_an_open_alarm_while_the_condition_holds() -> None:
    assert decide(opened(), seen(AlarmState.FIRING, T0 + 300), T0 + 300) == []


def test_it_updates_the_message_of_an_open_alarm_without_a_new_incident() -> None:
    (change,) = decide(opened(), seen(AlarmState.FIRING, T0 + 300, "fuller"), T0 + 300)
    assert (change.action, change.incident, change.detail) == (Change.UPDATE, "abc123", "fuller")
    assert change.evidence_at == T0  # still the record that raised it


def test_it_recovers_only_on_a_newer_record() -> None:
    # The same record, read again, and an older (backlog) one.
    assert decide(opened(), seen(AlarmState.CLEAR, T0), T0 + 60) == []
    assert decide(opened(), seen(AlarmState.CLEAR, T0 - 60), T0 + 60) == []
    (change,) = decide(opened(), seen(AlarmState.CLEAR, T0 + 300, "below"), T0 + 300)
    assert (change.action, change.incident, change.detail) == (Change.RECOVER, "abc123", "below")


def test_it_recovers_an_alarm_raised_on_no_record_with_the_first_record() -> None:
    (change,) = decide(opened(evidence_at=None), seen(AlarmState.CLEAR, T0), T0)
    assert change.action == Change.RECOVER
    assert decide(opened(evidence_at=None), seen(AlarmState.CLEAR, None), T0) == []


def test_it_leaves_alarms_alone_when_the_data_cannot_tell() -> None:
    assert decide(opened(), seen(AlarmState.UNKNOWN, T0 + 300), T0 + 300) == []
    assert decide({}, seen(AlarmState.UNKNOWN, T0 + 300), T0 + 300) == []
    assert decide(opened(), {}, T0 + 300) == []
    assert decide({}, seen(AlarmState.CLEAR, T0 + 300), T0 + 300) == []


def run(open_alarms: dict[str, OpenAlarm], facts: KeyFacts, now: float) -> list[Transition]:
    return decide(open_alarms, observe_key(facts, now, RuleSettings(), open_alarms), now)


def test_it_freezes_the_other_alarms_of_a_stale_key_and_recovers_them_on_fresh_data() -> None:
    full = make_record(collected_at=T0, volumes={"/data": volume(95.0)})
    first = run({}, KeyFacts("pandaharvester01", parse_record(full), T0), T0)
    assert [c.action for c in first] == [Change.ALERT]
    open_alarms = {DISK: OpenAlarm(DISK, first[0].incident, first[0].status, first[0].detail,
                                   T0, T0)}
    # An hour later nothing new arrived: the key is stale, the disk alarm stays open.
    later = T0 + 3600
    stale = run(open_alarms, KeyFacts("pandaharvester01", parse_record(full), T0), later)
    assert [(c.action, c.target) for c in stale] == [
        (Change.ALERT, "reporter_stale:pandaharvester01")]
    open_alarms["reporter_stale:pandaharvester01"] = OpenAlarm(
        "reporter_stale:pandaharvester01", stale[0].incident, stale[0].status, stale[0].detail,
        later, T0)
    # A fresh record with room again recovers both, each saying why.
    emptied = make_record(collected_at=later + 10, volumes={"/data": volume(50.0)})
    back = run(open_alarms, KeyFacts("pandaharvester01", parse_record(emptied), later + 10),
               later + 20)
    assert sorted((c.action, c.target) for c in back) == [
        (Change.RECOVER, DISK), (Change.RECOVER, "reporter_stale:pandaharvester01")]
    reasons = {c.target: c.detail for c in back}
    assert reasons[DISK].endswith("below 90 % again")
    assert reasons["reporter_stale:pandaharvester01"] == (
        "pandaharvester01: reports again (latest record collected 2026-10-02 19:27:15Z, "
        "10 s ago)")


def test_it_does_not_recover_a_stale_key_from_its_old_record() -> None:
    record = make_record(collected_at=T0)
    raised = {"reporter_stale:pandaharvester01": OpenAlarm(
        "reporter_stale:pandaharvester01", "x", "silent", "old", T0 + 1000, T0)}
    # A bigger interval would call the same record fresh: not newer, so no recovery.
    facts = KeyFacts("pandaharvester01", parse_record(record), T0)
    observations = observe_key(facts, T0 + 1000, RuleSettings(report_interval_s=3600), raised)
    assert observations["reporter_stale:pandaharvester01"].state is AlarmState.CLEAR
    assert decide(raised, observations, T0 + 1000) == []
