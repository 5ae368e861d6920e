"""Telemetry 1.9: each fetching queue's streak (`last_ok_at`, `failing_since`,
`failing_errors`), found by the order of the fetcher's lines and carried across runs in the
state's `fetching` part, so the monitor can say "failing since" the first failure after the
last success on the first record that shows it (issue 21)."""

from __future__ import annotations

import calendar
import copy
import json
from pathlib import Path
from typing import Any, Optional

import jsonschema
import pytest

from clusterwatch.reporter import harvester_log, state_repair
from clusterwatch.reporter import record as reporter_record
from clusterwatch.reporter.harvester_log import (
    MAX_STREAK_CLASSES,
    STREAK_FIELDS,
    carry_fetch_streaks,
    fetching_section,
)
from tests.support.harvester_host import Host
from tests.support.reporter_zipapp import run_app

from .main_support import newest_buffered, validate

Q = "BNL_PanDA_1"
SSL = ("failed to POST with <class 'requests.exceptions.SSLError'>:HTTPSConnectionPool(host="
       "'pandaserver01.sdcc.bnl.gov', port=25443): Max retries exceeded (Caused by SSLError("
       "SSLCertVerificationError(1, '[SSL: CERTIFICATE_VERIFY_FAILED] ...')))")
TIMEOUT = "failed to POST with <class 'requests.exceptions.ReadTimeout'>:Read timed out."


def fetch(hms: str, outcome: str = "OK", queue: str = Q, got: int = 0) -> str:
    """One fetch as the current harvester logs it (a failure's traceback included)."""
    head = f"2026-10-02 {hms},412 panda.log.job_fetcher: "
    text = (f"{head}DEBUG    run <queueName={queue}> getting 35 jobs for prodSourceLabel=managed "
            f"rtype=None\n{head}INFO     run <queueName={queue}> got {got} jobs for "
            f"prodSourceLabel=managed rtype=None with {outcome}")
    if outcome.startswith("failed"):
        text += (" Traceback (most recent call last):\n  File \"...\", line 703, in urlopen\n"
                 "requests.exceptions.SSLError: HTTPSConnectionPool(...)\n")
    return text + "  : took 0.091 sec\n"


def streaks(*lines: str, previous: Any = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """({queue: its streak fields} of one interval's lines joined to `previous`, the state)."""
    section, state = carry_fetch_streaks(fetching_section(["".join(lines).encode()]),
                                         previous if previous is not None else {})
    return {name: {key: queue[key] for key in STREAK_FIELDS}
            for name, queue in section["queues"].items()}, state


def said(last_ok_at: Optional[str], failing_since: Optional[str] = None,
         **errors: int) -> dict[str, Any]:
    def at(hms: Optional[str]) -> Optional[str]:
        return None if hms is None else f"2026-10-02T{hms}Z"
    return {"last_ok_at": at(last_ok_at), "failing_since": at(failing_since),
            "failing_errors": errors}


# --- within one interval ----------------------------------------------------------------------

def test_the_failures_after_the_last_success_are_the_streak() -> None:
    seen, _ = streaks(fetch("18:20:44", got=35), fetch("18:21:44", SSL), fetch("18:22:44"),
                      fetch("18:23:05", SSL), fetch("18:24:05", TIMEOUT),
                      fetch("18:24:50", SSL))
    assert seen == {Q: said("18:22:44", "18:23:05", SSLError=2, ReadTimeout=1)}


def test_a_success_ends_the_streak_and_an_empty_answer_is_a_success() -> None:
    seen, _ = streaks(fetch("18:20:44", SSL), fetch("18:21:44", SSL),
                      fetch("18:22:44", "no jobs in PanDA"),
                      fetch("18:23:44", "no jobs in PanDA", queue="UM_GREX_PanDA_1"))
    assert seen == {Q: said("18:22:44"), "UM_GREX_PanDA_1": said("18:23:44")}


def test_with_no_success_known_the_streak_begins_at_the_first_failure() -> None:
    seen, state = streaks(fetch("18:23:05", SSL), fetch("18:24:05", SSL))
    assert seen == {Q: said(None, "18:23:05", SSLError=2)}
    assert state == {"queues": {Q: seen[Q]}}


def test_the_order_of_the_lines_decides_not_their_times() -> None:
    """A clock stepped back: the last line is the latest attempt, whatever its time says."""
    seen, _ = streaks(fetch("18:24:05", SSL), fetch("18:20:44"))
    assert seen == {Q: said("18:20:44")}
    seen, _ = streaks(fetch("18:24:05"), fetch("18:20:44", SSL))
    assert seen == {Q: said("18:24:05", "18:20:44", SSLError=1)}


# --- across intervals ---------------------------------------------------------------------------

def test_a_streak_begun_in_the_previous_interval_goes_on_from_its_first_failure() -> None:
    """The previous record still showed a success (18:22:44); its last attempts failed. This
    interval's attempts all failed: failing since 18:23:05, every failure counted."""
    first, state = streaks(fetch("18:22:44"), fetch("18:23:05", SSL), fetch("18:24:05", SSL))
    assert first == {Q: said("18:22:44", "18:23:05", SSLError=2)}
    second, state = streaks(fetch("18:25:05", SSL), fetch("18:26:05", TIMEOUT),
                            previous=state)
    assert second == {Q: said("18:22:44", "18:23:05", SSLError=3, ReadTimeout=1)}
    third, state = streaks(fetch("18:30:05", SSL), previous=state)
    assert third == {Q: said("18:22:44", "18:23:05", SSLError=4, ReadTimeout=1)}
    ended, state = streaks(fetch("18:35:05", SSL), fetch("18:36:05"), previous=state)
    assert ended == {Q: said("18:36:05")} and state == {"queues": ended}


def test_after_a_success_in_the_previous_interval_the_streak_begins_in_this_one() -> None:
    _, state = streaks(fetch("18:24:05", SSL), fetch("18:24:50"))
    seen, _ = streaks(fetch("18:25:05", SSL), fetch("18:26:05", SSL), previous=state)
    assert seen == {Q: said("18:24:50", "18:25:05", SSLError=2)}


def test_a_queue_without_attempts_keeps_its_streak_and_no_queues_keep_the_state() -> None:
    _, state = streaks(fetch("18:24:05", SSL))
    seen, kept = streaks(fetch("18:25:44", queue="UM_GREX_PanDA_1"), previous=state)
    assert seen == {"UM_GREX_PanDA_1": said("18:25:44")}
    assert kept["queues"][Q] == said(None, "18:24:05", SSLError=1)
    unread = {"error": "PermissionError: [Errno 13] Permission denied"}
    assert carry_fetch_streaks(dict(unread), kept) == (unread, kept)


def test_a_days_long_streak_keeps_its_most_frequent_classes() -> None:
    dialogs = [fetch(f"18:{n // 60:02d}:{n % 60:02d}", f"server says {n}") for n in range(30)]
    _, state = streaks(fetch("17:59:59"), *dialogs[:15])
    seen, _ = streaks(*dialogs[15:], fetch("18:59:00", SSL), fetch("18:59:30", SSL),
                      previous=state)
    errors = seen[Q]["failing_errors"]
    assert len(errors) == MAX_STREAK_CLASSES and errors["SSLError"] == 2
    assert seen[Q]["failing_since"] == "2026-10-02T18:00:00Z"


def test_one_interval_failing_in_many_ways_keeps_its_most_frequent_classes() -> None:
    dialogs = [fetch(f"18:{n // 60:02d}:{n % 60:02d}", f"server says {n}") for n in range(30)]
    seen, state = streaks(fetch("17:59:59"), *dialogs, fetch("18:59:00", SSL),
                          fetch("18:59:30", SSL))
    errors = seen[Q]["failing_errors"]
    assert len(errors) == MAX_STREAK_CLASSES and errors["SSLError"] == 2
    assert state["queues"][Q]["failing_errors"] == errors


@pytest.mark.parametrize("damaged", [
    None, [], "queues", {"queues": []}, {"queues": {Q: None}},
    {"queues": {Q: {"last_ok_at": "yesterday", "failing_since": None, "failing_errors": {}}}},
    {"queues": {Q: {"last_ok_at": None, "failing_since": "2026-10-02T18:20:05Z",
                    "failing_errors": {}}}},
    {"queues": {Q: {"last_ok_at": None, "failing_since": "2026-10-02T18:20:05Z",
                    "failing_errors": {"SSLError": 0}}}},
    {"queues": {Q: {"last_ok_at": None, "failing_since": "2026-10-02T18:20:05Z",
                    "failing_errors": {"SSLError": True}}}},
    {"queues": {Q: {"last_ok_at": None, "failing_since": None, "failing_errors": {},
                    "extra": 1}}},
    {"queues": {Q: {"last_ok_at": 1790965385, "failing_since": None, "failing_errors": {}}}},
])
def test_a_damaged_streak_in_the_state_starts_afresh(damaged: Any) -> None:
    """Never a value the schema refuses in the record (the monitor would set it aside)."""
    seen, state = streaks(fetch("18:25:05", SSL), previous=damaged)
    assert seen == {Q: said(None, "18:25:05", SSLError=1)}
    assert state == {"queues": seen}


# --- in the run: collect and its state ------------------------------------------------------------

T0 = float(calendar.timegm((2026, 10, 2, 18, 20, 0)))


class Runs:
    """`collect` as cron runs it, in process: the state of each run handed to the next."""

    def __init__(self, tmp_path: Path) -> None:
        self.host = Host(tmp_path)
        self.sources = reporter_record.Sources(
            str(self.host.log_dir), str(tmp_path / "no.cfg"), str(tmp_path / "no.json"),
            [str(tmp_path)])
        self.state: dict[str, Any] = {}
        self.now = T0
        self.run()  # the first run: positions only

    def run(self, *lines: str) -> dict[str, Any]:
        self.host.append("".join(lines))
        record, self.state = reporter_record.collect("testhost", self.sources, self.state,
                                                     self.now)
        validate(record)
        self.now += 300
        return record

    def queue(self, *lines: str) -> dict[str, Any]:
        found: dict[str, Any] = self.run(*lines)["fetching"]["queues"][Q]
        return found


def test_the_state_carries_the_streak_from_run_to_run(tmp_path: Path) -> None:
    runs = Runs(tmp_path)
    assert runs.queue(fetch("18:20:44"), fetch("18:23:05", SSL))["failing_since"] == (
        "2026-10-02T18:23:05Z")
    assert runs.state["fetching"]["written_at"] == T0 + 300
    carried = runs.queue(fetch("18:25:05", SSL))
    assert {key: carried[key] for key in STREAK_FIELDS} == said("18:20:44", "18:23:05",
                                                                SSLError=2)
    assert carried["errors"] == {"SSLError": 1}  # the interval's counts are the interval's


def test_a_part_another_run_left_behind_is_not_carried_on(tmp_path: Path) -> None:
    """A 1.8 reporter (a downgrade) keeps the part untouched while it runs: its streak says
    nothing of what was logged since, so the next 1.9 run starts afresh."""
    runs = Runs(tmp_path)
    runs.run(fetch("18:20:44"), fetch("18:23:05", SSL))
    runs.now += 3600  # runs of another reporter since the part was written, the last:
    runs.state["last_run"] = runs.now - 300
    assert runs.queue(fetch("19:25:05", SSL))["failing_since"] == "2026-10-02T19:25:05Z"


@pytest.mark.parametrize("part", [[1, 2], "fetching", 7])
def test_a_part_of_the_wrong_type_is_dropped(tmp_path: Path, part: Any) -> None:
    runs = Runs(tmp_path)
    runs.run(fetch("18:20:44"), fetch("18:23:05", SSL))
    runs.state["fetching"] = part
    assert runs.queue(fetch("18:25:05", SSL))["failing_since"] == "2026-10-02T18:25:05Z"


def test_a_failed_join_sends_the_queues_as_an_older_reporter_would(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runs = Runs(tmp_path)
    runs.run(fetch("18:23:05", SSL))

    def broken(section: Any, previous: Any) -> Any:
        raise RuntimeError("a bug")

    monkeypatch.setattr(harvester_log, "carry_fetch_streaks", broken)
    queue = runs.queue(fetch("18:25:05", SSL))
    assert not set(STREAK_FIELDS) & set(queue) and queue["failed"] == 1
    assert runs.state["fetching"] == {}


def test_a_state_file_cut_short_keeps_its_fetching_part(tmp_path: Path) -> None:
    runs = Runs(tmp_path)
    runs.run(fetch("18:20:44"), fetch("18:23:05", SSL))
    text = json.dumps(runs.state, sort_keys=True)  # as state.save writes it
    entry = text.index('"panda-job_fetcher.log": {')
    cut = text[:text.index("}", entry) + 1] + ', "panda-propa'  # the disk lost its tail
    salvaged = state_repair.salvage(cut)
    assert salvaged["fetching"] == runs.state["fetching"]
    assert salvaged["last_run"] == runs.state["last_run"]
    runs.state = salvaged
    carried = runs.queue(fetch("18:25:05", SSL))
    assert carried["failing_since"] == "2026-10-02T18:23:05Z"


# --- the schema -------------------------------------------------------------------------------

def test_the_schema_takes_records_with_and_without_the_streak(tmp_path: Path) -> None:
    runs = Runs(tmp_path)
    record = runs.run(fetch("18:20:44"), fetch("18:23:05", SSL))
    older = copy.deepcopy(record)
    older["reporter_version"] = "1.8.0"
    for name in STREAK_FIELDS:
        del older["fetching"]["queues"][Q][name]
    validate(older)
    validator = jsonschema.Draft202012Validator(reporter_record.load_schema())
    for name, bad in [("failing_since", "2026-10-02 18:23:05"), ("last_ok_at", 5),
                      ("failing_errors", {"SSLError": 0}), ("failing_errors", [])]:
        wrong = copy.deepcopy(record)
        wrong["fetching"]["queues"][Q][name] = bad
        assert not validator.is_valid(wrong), (name, bad)


# --- the zipapp, as cron runs it ---------------------------------------------------------------

def test_the_zipapp_carries_the_streak_across_its_runs(tmp_path: Path, zipapp: Path) -> None:
    host = Host(tmp_path)
    host.without_monitor()
    assert run_app(zipapp, *host.args()).returncode == 2  # first run: positions
    host.append(fetch("18:20:44", got=35) + fetch("18:23:05", SSL))
    assert run_app(zipapp, *host.args()).returncode == 2
    first = newest_buffered(host)
    assert first["reporter_version"] == "1.9.0"
    assert first["fetching"]["queues"][Q]["failing_since"] == "2026-10-02T18:23:05Z"
    host.append(fetch("18:25:05", SSL) + fetch("18:26:05", SSL))
    assert run_app(zipapp, *host.args()).returncode == 2
    queue = newest_buffered(host)["fetching"]["queues"][Q]
    assert {key: queue[key] for key in STREAK_FIELDS} == said("18:20:44", "18:23:05",
                                                              SSLError=3)
    assert (queue["attempts"], queue["failed"]) == (2, 2)
