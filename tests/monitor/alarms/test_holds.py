"""The pure part of holding: an alarm's facts for matchers and what a run sends."""

from __future__ import annotations

from collections.abc import Callable
from typing import Optional

from clusterwatch.monitor.alarms.holds import alarm_facts, holder, route
from clusterwatch.monitor.alarms.rules import KeyFacts
from clusterwatch.monitor.alarms.transitions import Change, OpenAlarm, Transition
from clusterwatch.monitor.record.host_record import parse_record
from clusterwatch.notify.incident import Action
from clusterwatch.notify.silences import Hold, Silence, matches, parse_matcher
from tests.monitor.alarms.support import T0, fetch_queue, make_record, ssl_failing

KINDS = ("key", "host", "queue", "filesystem")
PANDA = "panda_unreachable:pandaharvester01"
DISK = "host_disk_space:pandaharvester01:/data"
HOLD = Hold("silence 0123456789ab", "alice", "certificate renewal", T0 + 3600)


def facts_of(record: dict[str, object]) -> KeyFacts:
    return KeyFacts("pandaharvester01", parse_record(record), T0)


def silence(*texts: str, start: float = T0 - 60, end: float = T0 + 3600) -> Silence:
    return Silence("0123456789ab", tuple(parse_matcher(t, KINDS) for t in texts), start, end,
                   "maintenance", "alice", start)


def test_it_describes_each_alarm_by_key_host_queue_and_filesystem() -> None:
    facts = facts_of(ssl_failing())
    assert alarm_facts(PANDA, facts) == {
        "key": ["pandaharvester01"], "host": ["pandaharvester01.sdcc.bnl.gov", "pandaharvester01"],
        "queue": ["BNL_PanDA_1", "UM_GREX_PanDA_1"], "filesystem": []}
    assert alarm_facts(DISK, facts)["queue"] == []  # a disk is not its queues' outage
    assert alarm_facts(DISK, facts)["filesystem"] == ["/data"]
    assert alarm_facts("reporter_stale:osgsub01", None) == {
        "key": ["osgsub01"], "host": [], "queue": [], "filesystem": []}


def test_it_holds_by_every_kind_the_alarm_has_and_none_it_lacks() -> None:
    facts = {PANDA: alarm_facts(PANDA, facts_of(ssl_failing())),
             DISK: alarm_facts(DISK, facts_of(ssl_failing()))}

    def held(*texts: str) -> list[str]:
        found = tuple(parse_matcher(t, KINDS) for t in texts)
        return [name for name in (PANDA, DISK) if matches(found, facts[name])]

    assert held("key:pandaharvester0*") == [PANDA, DISK]
    assert held("queue:UM_GREX*") == [PANDA]
    assert held("filesystem:/data") == [DISK]
    assert held("key:pandaharvester01", "filesystem:/data") == [DISK]
    assert held("host:pandaharvester01") == [PANDA, DISK]  # the short name
    assert held("host:*.bnl.gov", "queue:CERN_*") == []  # every kind must hold
    assert held("key:pandaharvester02") == []


def test_it_asks_the_silences_and_windows_of_the_key_it_holds() -> None:
    other = make_record("osgsub01", queues={"CERN_PROD": fetch_queue(6)})
    keys = [facts_of(ssl_failing()), KeyFacts("osgsub01", parse_record(other), T0)]
    hold = holder(keys, [silence("queue:BNL_*")], [], T0)
    found = hold(PANDA)
    assert found is not None and found.by == "silence 0123456789ab" and found.until == T0 + 3600
    assert hold("panda_unreachable:osgsub01") is None  # its queues are not BNL's
    assert holder(keys, [silence("queue:BNL_*", end=T0)], [], T0)(PANDA) is None  # ended
    assert holder(keys, [], [], T0)(PANDA) is None


def alert(target: str, incident: str = "inc1") -> Transition:
    return Transition(Change.ALERT, target, "SSLError", f"{target}: down", incident, T0)


def recover(target: str, incident: str = "inc1") -> Transition:
    return Transition(Change.RECOVER, target, "OK", f"{target}: fine", incident, T0 + 60)


def opened(target: str, held: bool, incident: str = "inc1") -> OpenAlarm:
    return OpenAlarm(target, incident, "SSLError", f"{target}: down", T0, T0, held)


def hold_of(*targets: str) -> Callable[[str], Optional[Hold]]:
    return lambda target: HOLD if target in targets else None


def test_it_leaves_a_held_alert_out_and_marks_its_incident() -> None:
    routing = route([alert(PANDA), alert(DISK, "inc2")], {}, hold_of(PANDA))
    assert [(e.action, e.target) for e in routing.events] == [(Action.ALERT, DISK)]
    assert routing.held_incidents == {"inc1"} and routing.released_incidents == set()


def test_it_releases_a_held_alert_once_its_hold_is_over() -> None:
    before = {PANDA: opened(PANDA, held=True)}
    assert route([], before, hold_of(PANDA)).events == []  # still held: nothing
    routing = route([], before, hold_of())
    (event,) = routing.events
    assert (event.action, event.incident, event.released) == (Action.ALERT, "inc1", True)
    assert routing.released_incidents == {"inc1"}
    # its message changed in the run that releases it: the new message goes out
    changed = Transition(Change.UPDATE, PANDA, "TimeoutError", "now timeouts", "inc1", T0)
    (event,) = route([changed], before, hold_of()).events
    assert (event.status, event.detail) == ("TimeoutError", "now timeouts")
    # released already (the flag is down): never again
    assert route([], {PANDA: opened(PANDA, held=False)}, hold_of()).events == []


def test_it_closes_a_held_alarm_silently_and_never_holds_a_recovery() -> None:
    routing = route([recover(PANDA)], {PANDA: opened(PANDA, held=True)}, hold_of())
    assert routing.events == [] and routing.silent_closes == 1
    assert routing.released_incidents == set()  # closed before its hold ended: no alert
    # delivered before the silence began: its recovery goes out under the silence
    (event,) = route([recover(PANDA)], {PANDA: opened(PANDA, held=False)},
                     hold_of(PANDA)).events
    assert event.action is Action.RECOVER


def test_its_matcher_kinds_are_the_alarms_page_and_commands_kinds() -> None:
    from clusterwatch.monitor.alarms import operations

    assert operations.MATCHER_KINDS == KINDS

