"""`panda_unreachable` on a reporter's failing streak (telemetry 1.9, issue 21): raised on the
first record whose queues' latest fetches all failed, "failing since" the first failure after
the last success; older reporters' records decided as before. Then the 2026-10-02 incident
replayed: the real reporter's `collect` every five minutes over the harvester's log lines, each
record stored through ingest's store, the alarm run every minute, before (a 1.8 record, the
same without the streak) and after."""

from __future__ import annotations

import calendar
import copy
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import jsonschema
import pytest

from clusterwatch.loopback import harvester_logs as logs
from clusterwatch.monitor.alarms.config import AlarmsConfig
from clusterwatch.monitor.alarms.observation import (
    DETAIL_CHARS,
    AlarmState,
    Observation,
    RuleSettings,
)
from clusterwatch.monitor.alarms.panda_rule import observe_fetching
from clusterwatch.monitor.alarms.run import run_alarms
from clusterwatch.monitor.alarms.transitions import Change
from clusterwatch.monitor.record.host_record import parse_record
from clusterwatch.reporter import record as reporter_record
from clusterwatch.reporter.harvester_log import STREAK_FIELDS
from tests.monitor.alarms.support import T0, fetch_queue, make_record, put, ssl_failing, utc

KEY = "pandaharvester01"
Q = "BNL_PanDA_1"
PANDA_SERVER = "pandaserver01.sdcc.bnl.gov"
SCHEMA = jsonschema.Draft202012Validator(reporter_record.load_schema())


def streak(queue: dict[str, Any], last_ok_at: Optional[float], failing_since: Optional[float],
           failing_errors: Optional[Mapping[str, int]] = None) -> dict[str, Any]:
    """A support.fetch_queue entry as a 1.9 reporter sends it."""
    return {**queue, "last_ok_at": None if last_ok_at is None else utc(last_ok_at),
            "failing_since": None if failing_since is None else utc(failing_since),
            "failing_errors": dict(failing_errors or {})}


def failing_mid_interval(collected_at: float = T0) -> dict[str, Any]:
    """The interval of 2026-10-02 18:23: fetches worked, then every one failed with SSLError.
    The interval's counts hold successes (an older rule's "not every fetch failed")."""
    bnl = fetch_queue(4, {"SSLError": 2}, collected_at - 60)
    bnl["last"].update(got=0, outcome="failed to POST with SSLError", error_class="SSLError")
    um = fetch_queue(3, {"SSLError": 1}, collected_at - 20)
    um["last"].update(got=0, outcome="failed to POST with SSLError", error_class="SSLError")
    return make_record(collected_at=collected_at, queues={
        "BNL_PanDA_1": streak(bnl, collected_at - 200, collected_at - 120, {"SSLError": 2}),
        "UM_GREX_PanDA_1": streak(um, collected_at - 80, collected_at - 20, {"SSLError": 1}),
    })


def older(record: dict[str, Any]) -> dict[str, Any]:
    """The record a 1.8 reporter makes of the same lines: the same, without the streak."""
    made = copy.deepcopy(record)
    made["reporter_version"] = "1.8.0"
    for queue in (made["fetching"].get("queues") or {}).values():
        for name in STREAK_FIELDS:
            queue.pop(name, None)
    return made


def observe(record: dict[str, Any]) -> Observation:
    errors = [error.message for error in SCHEMA.iter_errors(record)]
    assert errors == []
    return observe_fetching(KEY, parse_record(record), T0)


# --- the rule ------------------------------------------------------------------------------

def test_it_raises_on_the_first_record_whose_queues_are_all_failing() -> None:
    seen = observe(failing_mid_interval())
    assert seen.state is AlarmState.FIRING
    assert seen.status == "SSLError"
    assert seen.detail.startswith(
        "pandaharvester01: the latest fetches of all 2 queues failed with SSLError (3 of 7 in "
        "the interval), failing since 2026-10-02 18:25:05Z (3 failed attempts since: "
        "SSLError 3) — last error: "
        "2026-10-02 18:24:05,412 panda.log.communicator: ERROR get_jobs <siteName=BNL_PanDA_1> "
        "failed to POST with <class 'requests.exceptions.SSLError'>")
    assert "CERTIFICATE_VERIFY_FAILED" in seen.detail and len(seen.detail) <= DETAIL_CHARS
    assert seen.evidence_at == T0 - 120  # the evidence dates from the first failure
    # The same lines as an older reporter saw them: some fetches worked, so no alarm yet.
    assert observe(older(failing_mid_interval())).state is AlarmState.CLEAR


def test_it_dates_a_streak_that_began_in_an_earlier_interval_from_its_first_failure() -> None:
    """Every attempt of this interval failed; the streak began in the previous one, whose
    record still showed a success (the reporter's state carried it)."""
    queue = fetch_queue(5, {"SSLError": 5}, T0 - 10)
    record = make_record(queues={"BNL_PanDA_1": streak(queue, T0 - 400, T0 - 330,
                                                       {"SSLError": 7, "ReadTimeout": 1})})
    seen = observe(record)
    assert seen.state is AlarmState.FIRING and seen.evidence_at == T0 - 330
    assert seen.detail.startswith(
        "pandaharvester01: every fetch failed with SSLError (5 of 5), failing since "
        "2026-10-02 18:21:35Z (8 failed attempts since: SSLError 7, ReadTimeout 1) — ")


def test_an_interval_whose_fetches_all_failed_keeps_the_older_words_and_adds_since() -> None:
    record = ssl_failing()
    for queue in record["fetching"]["queues"].values():
        queue.update(last_ok_at=None, failing_since=utc(T0 - 290),
                     failing_errors=dict(queue["errors"]))
    seen = observe(record)
    assert seen.state is AlarmState.FIRING and seen.evidence_at == T0 - 290
    assert seen.detail.startswith(
        "pandaharvester01: every fetch failed with SSLError (6 of 6), failing since "
        "2026-10-02 18:22:15Z (6 failed attempts since: SSLError 6) — last error: "
        "2026-10-02 18:24:05,412 panda.log.communicator: ERROR get_jobs")


def test_latest_failures_of_one_class_after_others_name_the_latest() -> None:
    queue = fetch_queue(3, {"ReadTimeout": 1, "SSLError": 2}, T0 - 10)
    queue["last"].update(outcome="failed: SSLError", error_class="SSLError")
    record = make_record(queues={Q: streak(queue, T0 - 400, T0 - 200,
                                           {"ReadTimeout": 1, "SSLError": 2})},
                         communicator_line=None)
    seen = observe(record)
    assert seen.state is AlarmState.FIRING and seen.status == "SSLError"
    assert seen.detail == (
        "pandaharvester01: the latest fetches of BNL_PanDA_1 failed with SSLError (3 of 3 in "
        "the interval), failing since 2026-10-02 18:23:45Z (3 failed attempts since: "
        "SSLError 2, ReadTimeout 1) — last error: 2026-10-02T18:26:55Z BNL_PanDA_1: "
        "failed: SSLError")


def test_one_failure_after_fetches_that_worked_says_nothing_yet() -> None:
    queue = fetch_queue(5, {"ReadTimeout": 1}, T0 - 10)
    queue["last"].update(got=0, outcome="failed: ReadTimeout", error_class="ReadTimeout")
    seen = observe(make_record(queues={Q: streak(queue, T0 - 70, T0 - 10, {"ReadTimeout": 1})}))
    assert seen.state is AlarmState.UNKNOWN
    assert seen.detail == ("pandaharvester01: the latest fetch failed with ReadTimeout "
                           "(2026-10-02 18:26:55Z) after fetches that worked: one failure says "
                           "nothing yet")
    # The interval's one fetch failing fires, as the older rule always did.
    only = streak(fetch_queue(1, {"SSLError": 1}, T0 - 10), T0 - 400, T0 - 10, {"SSLError": 1})
    assert observe(make_record(queues={Q: only})).state is AlarmState.FIRING
    # Two queues each failing once after working: two failures, the harvester's.
    two = {name: streak(queue, T0 - 70, T0 - 10, {"ReadTimeout": 1})
           for name in ("A", "B")}
    assert observe(make_record(queues=two)).state is AlarmState.FIRING


def test_a_queue_whose_latest_fetch_worked_clears_it() -> None:
    ok = streak(fetch_queue(3, {"SSLError": 1}, T0 - 10), T0 - 10, None)
    failing = fetch_queue(2, {"SSLError": 2}, T0 - 40)
    record = make_record(queues={"A": ok, "B": streak(failing, None, T0 - 100, {"SSLError": 2})})
    seen = observe(record)
    assert seen.state is AlarmState.CLEAR and seen.evidence_at == T0
    assert seen.detail == ("pandaharvester01: fetches succeed again (2 of 5 OK, last "
                           "2026-10-02 18:26:55Z on A)")


def test_latest_failures_of_two_classes_say_nothing_either_way() -> None:
    a = streak(fetch_queue(2, {"SSLError": 2}, T0 - 10), None, T0 - 100, {"SSLError": 2})
    b = streak(fetch_queue(2, {"ReadTimeout": 2}, T0 - 20), None, T0 - 90, {"ReadTimeout": 2})
    seen = observe(make_record(queues={"A": a, "B": b}))
    assert seen.state is AlarmState.UNKNOWN
    assert seen.detail == ("pandaharvester01: every queue failing since 2026-10-02 18:25:25Z, "
                           "its latest fetches not with one error class (ReadTimeout, "
                           "SSLError)")


def test_a_streak_that_contradicts_its_last_attempt_is_read_as_an_older_record() -> None:
    """failing_since null while the last attempt failed: the record is judged by its counts."""
    queue = fetch_queue(2, {"SSLError": 1}, T0 - 10)
    queue["last"].update(got=0, outcome="failed", error_class="SSLError")
    record = make_record(queues={"A": streak(queue, T0 - 100, None)})
    assert observe(record) == observe(older(record))
    assert observe(record).state is AlarmState.CLEAR  # 1 of 2 OK, as the rule always said


@pytest.mark.parametrize(("queues", "state"), [
    ({"A": fetch_queue(6)}, AlarmState.CLEAR),
    ({"A": fetch_queue(4, {"SSLError": 4}), "B": fetch_queue(2, {"SSLError": 2})},
     AlarmState.FIRING),
    ({"A": fetch_queue(3, {"SSLError": 3}), "B": fetch_queue(2, {"ReadTimeout": 2})},
     AlarmState.UNKNOWN),
    ({"A": fetch_queue(6, {"SSLError": 1}), "B": fetch_queue(2)}, AlarmState.CLEAR),
    ({"A": fetch_queue(0)}, AlarmState.UNKNOWN),
])
def test_older_records_are_decided_as_before(queues: dict[str, Any], state: AlarmState) -> None:
    """No streak fields, or null ones (what a 1.9 record would say were its times unreadable):
    the interval's counts decide, with the message the rule always gave."""
    seen = observe(make_record(queues=queues))
    assert seen.state is state and seen.evidence_at == T0
    assert observe(make_record(queues={name: streak(q, None, None)
                                       for name, q in queues.items()})) == seen
    if state is AlarmState.FIRING:
        assert seen.detail.startswith("pandaharvester01: every fetch failed with SSLError "
                                      "(6 of 6) — last error: ")


# --- the 2026-10-02 incident, replayed -------------------------------------------------------

INTERVAL_S = 300  # the reporter's cron
ALARM_EVERY_S = 60  # clusterwatch-monitor-alarms.timer
ALARM_OFFSET_S = 30  # the alarm timer's runs, seconds after each minute
QUEUES = {"BNL_PanDA_1": 5, "UM_GREX_PanDA_1": 44}  # each fetches once a minute, at :SS


def at(hms: str) -> float:
    h, m, s = (int(part) for part in hms.split(":"))
    return float(calendar.timegm((2026, 10, 2, h, m, s)))


@dataclass(frozen=True)
class Replay:
    first_failure: float
    records: list[tuple[float, dict[str, Any]]]  # (collected_at, record) of each cron run


def harvester_lines(start: float, end: float, cut_at: float) -> Iterator[tuple[float, str, str]]:
    """(time, log, text): each queue's fetch once a minute; from `cut_at` on, every one fails
    because PanDA's certificate does not verify (the communicator logs the call too)."""
    minute = start - start % 60
    while minute < end:
        for queue, second in QUEUES.items():
            t = minute + second
            if not start <= t < end:
                continue
            if t < cut_at:
                got = 35 if queue == "BNL_PanDA_1" else 0
                outcome = "OK" if got else "no jobs in PanDA"
                yield t, "job_fetcher", logs.fetch(t, queue, 35, got, outcome)
            else:
                yield t - 0.05, "communicator", logs.get_jobs_cert_failure(t - 0.05, queue,
                                                                           PANDA_SERVER)
                yield t, "job_fetcher", logs.fetch_cert_failure(t, queue, 35, PANDA_SERVER)
        minute += 60


def replay(tmp_path: Path, cut_at: float, start: float, end: float) -> Replay:
    """The real reporter's `collect` at each cron run, its state carried from run to run; the
    harvester's lines appended between the runs, as its daemons write them."""
    log_dir = tmp_path / "logs"
    logs.append(log_dir, {name: "" for name in logs.LOG_NAMES})
    sources = reporter_record.Sources(str(log_dir), str(tmp_path / "no.cfg"),
                                      str(tmp_path / "no.json"), [str(tmp_path)],
                                      interval_s=INTERVAL_S)
    lines = sorted(harvester_lines(start, end, cut_at))
    state: dict[str, Any] = {}
    records = []
    run = start
    while run <= end:
        due = [line for line in lines if line[0] <= run]
        lines = lines[len(due):]
        for _, name, text in due:
            logs.append(log_dir, {name: text})
        record, state = reporter_record.collect(KEY, sources, state, run)
        assert [error.message for error in SCHEMA.iter_errors(record)] == []
        if not record["interval"]["first_run"]:
            records.append((run, record))
        run += INTERVAL_S
    first = min(t for t, name, _ in harvester_lines(start, end, cut_at)
                if name == "job_fetcher" and t >= cut_at)
    return Replay(first, records)


def alarm_times(replays: Mapping[str, list[tuple[float, dict[str, Any]]]], end: float
                ) -> dict[str, tuple[float, str]]:
    """{key: (time, message)} of the alarm run that raises the key's panda_unreachable: each
    record stored as it is collected, the alarm run every minute."""
    config = AlarmsConfig(Path("/nonexistent/alarms.toml"), False,
                          RuleSettings(report_interval_s=INTERVAL_S))
    pending = {key: list(records) for key, records in replays.items()}
    first = min(records[0][0] for records in replays.values())
    raised: dict[str, tuple[float, str]] = {}
    t = first - first % ALARM_EVERY_S + ALARM_OFFSET_S
    while t <= end:
        for key, records in pending.items():
            while records and records[0][0] <= t:
                put(key, {**records.pop(0)[1], "host": key})
        for change in run_alarms(config, [], clock=lambda now=t: now).transitions:
            check, _, key = change.target.partition(":")
            if change.action is Change.ALERT and check == "panda_unreachable":
                raised.setdefault(key, (t, change.detail))
        t += ALARM_EVERY_S
    return raised


@pytest.mark.django_db
@pytest.mark.parametrize(("cut_at", "before_s", "after_s"), [
    # 2026-10-02 as logged: the first failed fetch at 18:23:05, mid-interval
    ("18:23:00", 7 * 60 + 25, 2 * 60 + 25),
    # the worst case: the first failure just after a run, behind one success in its interval
    ("18:20:30", 9 * 60 + 46, 4 * 60 + 46),
])
def test_the_2026_10_02_incident_is_raised_one_interval_sooner(
        tmp_path: Path, cut_at: str, before_s: int, after_s: int,
        record_property: Any) -> None:
    """Two harvesters cut off alike, one with a 1.8 reporter, one with 1.9, one monitor."""
    start, end = at("18:15:00"), at("18:45:00")
    seen = replay(tmp_path, at(cut_at), start, end)
    raised = alarm_times({"harvester18": [(t, older(r)) for t, r in seen.records],
                          "harvester19": seen.records}, end)
    (before_at, said_before), (after_at, said_after) = raised["harvester18"], raised["harvester19"]
    before, after = before_at - seen.first_failure, after_at - seen.first_failure
    record_property("minutes_before", round(before / 60, 2))
    record_property("minutes_after", round(after / 60, 2))
    print(f"first failed fetch {utc(seen.first_failure)}: alarm {before / 60:.1f} min later "
          f"with a 1.8 record, {after / 60:.1f} min with 1.9")
    assert (before, after) == (before_s, after_s)
    # an older reporter: up to two intervals and an alarm run; 1.9: one and an alarm run
    assert INTERVAL_S < before <= 2 * INTERVAL_S + ALARM_EVERY_S
    assert after <= INTERVAL_S + ALARM_EVERY_S
    assert said_before.startswith("harvester18: every fetch failed with SSLError")
    assert said_after.startswith(
        "harvester19: the latest fetches of all 2 queues failed with SSLError (")
    assert f"in the interval), failing since {utc(seen.first_failure).replace('T', ' ')} (" \
        in said_after
    assert "CERTIFICATE_VERIFY_FAILED" in said_after
