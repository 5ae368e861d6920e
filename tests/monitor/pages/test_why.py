"""The one-line "why this queue gets no work", from records of each scenario."""

from __future__ import annotations

import copy
import datetime as dt
from typing import Any

from clusterwatch.monitor.pages.queue_page import harvester_panel
from clusterwatch.monitor.pages.stored import StoredRecord
from clusterwatch.monitor.pages.why import Level, Why, WhyKind, queue_why
from tests.monitor.records import (
    QUEUE,
    SSL_MESSAGE,
    all_fetches_failing,
    example,
    no_jobs,
    parse,
    recent,
    utc,
)

NOW = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.timezone.utc)


def why(record: dict[str, Any], queue: str = QUEUE, age: float = 60) -> Why:
    fresh = recent(record, NOW - dt.timedelta(seconds=age))
    stored = StoredRecord("pandaharvester01", 1, fresh, parse(fresh["collected_at"]))
    return harvester_panel(stored, queue, NOW, 300).why


def test_it_names_the_error_class_when_every_fetch_fails() -> None:
    said = why(all_fetches_failing(example()))
    assert said.kind is WhyKind.FETCH_FAILING and said.level is Level.BAD
    assert said.text == "every fetch in the last interval failed with SSLError (6 of 6)"
    assert said.error_class == "SSLError"
    assert said.line is not None and said.line.endswith(SSL_MESSAGE)
    assert "CERTIFICATE_VERIFY_FAILED" in said.line
    assert said.line_source == "failed_calls.communicator.last"
    assert said.line_at is not None and said.line_at.age_s > 0


def test_it_shows_the_line_of_the_failing_class_over_a_newer_unrelated_one() -> None:
    record = all_fetches_failing(example())
    propagator = record["failed_calls"]["propagator"]
    later = utc(parse(record["failed_calls"]["communicator"]["last"]["at"])
                + dt.timedelta(seconds=30))
    propagator["last"] = {"at": later, "line": "... is_alive failed with ReadTimeout ..."}
    assert (why(record).line or "").endswith(SSL_MESSAGE)


def test_it_lists_the_classes_when_fetches_fail_in_several_ways() -> None:
    record = all_fetches_failing(example())
    record["fetching"]["queues"][QUEUE]["errors"] = {"SSLError": 4, "ReadTimeout": 2}
    said = why(record)
    assert said.text == ("every fetch in the last interval failed (SSLError: 4, "
                         "ReadTimeout: 2)")
    assert said.error_class == "SSLError"


def test_it_says_panda_has_no_jobs() -> None:
    said = why(no_jobs(example()))
    assert said.kind is WhyKind.NO_JOBS
    assert said.text.startswith("PanDA has no jobs for this queue: last fetch at ")
    assert said.text.endswith("got 0 (no jobs in PanDA)")
    assert why(example(), "UM_GREX_PanDA_1").kind is WhyKind.NO_JOBS  # "No jobs in PanDA" too


def test_it_says_new_workers_are_blocked_by_max_workers() -> None:
    said = why(example())
    assert said.kind is WhyKind.BLOCKED
    assert said.text == ("new workers blocked: n_queue(5) + n_ready(0) + n_running(412) "
                         ">= max_workers(400)")


def test_it_says_new_workers_are_blocked_by_a_zero_limit() -> None:
    said = why(example(), "BNL_ARM_1")
    assert said.text == ("new workers blocked: n_new_workers=0 "
                         "(set n_new_workers=0 since status=offline)")


def test_it_says_the_harvester_is_silent_when_the_data_is_stale() -> None:
    said = why(all_fetches_failing(example()), age=25 * 60)
    assert said.kind is WhyKind.STALE and said.level is Level.BAD
    assert said.text.startswith("harvester silent for 25 min: data is stale")
    assert "every fetch in the last interval failed with SSLError" in said.text
    assert said.error_class == "SSLError" and (said.line or "").endswith(SSL_MESSAGE)


def test_it_says_no_fetch_was_logged_for_a_queue_only_the_adjuster_names() -> None:
    said = why(example(), "MWT2_UCORE")
    assert said.kind is WhyKind.NO_FETCH
    assert said.text == ("the harvester logged no job fetch for this queue in the last "
                         "interval")


def test_it_says_when_the_fetcher_log_could_not_be_read() -> None:
    record = example()
    record["fetching"]["read"]["error"] = "cannot open panda-job_fetcher.log: Permission denied"
    said = why(record)
    assert said.kind is WhyKind.UNREADABLE and "Permission denied" in said.text


def test_it_says_submission_fails() -> None:
    record = no_jobs(example())
    record["fetching"]["queues"][QUEUE]["jobs_got"] = 5
    record["fetching"]["queues"][QUEUE]["last"].update(outcome="OK", got=5)
    record["submission"]["queues"][QUEUE].update(workers_submitted=0, submit_failures=3)
    said = why(record)
    assert said.kind is WhyKind.SUBMIT_FAILING
    assert said.text.startswith("worker submission failing: 3 failures")


def test_it_says_jobs_arrive_despite_some_failures() -> None:
    record = copy.deepcopy(example())
    record["adjustment"]["queues"].pop(QUEUE)
    said = why(record)
    assert said.kind is WhyKind.SOME_FAILED and said.level is Level.WARN
    assert said.text.startswith("4 of 6 fetches failed (SSLError: 2, ReadTimeout: 1, "
                                "database timeout: 1); jobs still arrive: got 47")


def test_it_says_jobs_arrive_when_nothing_blocks() -> None:
    record = example()
    record["adjustment"]["queues"].pop(QUEUE)
    entry = record["fetching"]["queues"][QUEUE]
    entry.update(failed=0, errors={})
    said = why(record)
    assert (said.kind, said.level) == (WhyKind.WORKING, Level.OK)
    assert said.text == "jobs arrive: got 47 in the last interval"


def test_it_says_a_first_run_counted_nothing() -> None:
    record = recent(example(), NOW)
    record["interval"]["first_run"] = True
    stored = StoredRecord("k", 1, record, NOW)
    assert harvester_panel(stored, QUEUE, NOW, 300).why.kind is WhyKind.FIRST_RUN


def test_it_combines_harvesters_naming_each_and_keeping_the_worst_level() -> None:
    good = Why(WhyKind.WORKING, "jobs arrive: got 3 in the last interval", Level.OK)
    bad = Why(WhyKind.FETCH_FAILING,
              "every fetch in the last interval failed with SSLError (2 of 2)", Level.BAD,
              "SSLError", "line")
    combined = queue_why([("h1", good), ("h2", bad)])
    assert combined.text == ("h1: jobs arrive: got 3 in the last interval; h2: every fetch in "
                             "the last interval failed with SSLError (2 of 2)")
    assert (combined.kind, combined.level, combined.error_class, combined.line) == (
        WhyKind.FETCH_FAILING, Level.BAD, "SSLError", "line")
    assert queue_why([("h1", good)]) is good
    assert queue_why([]).text == "no harvester reported this queue"


def test_it_ranks_a_warning_between_ok_and_bad() -> None:
    ok = Why(WhyKind.WORKING, "jobs arrive", Level.OK)
    warn = Why(WhyKind.NO_JOBS, "PanDA has no jobs", Level.WARN)
    bad = Why(WhyKind.STALE, "harvester silent", Level.BAD)
    assert queue_why([("h1", warn), ("h2", ok)]).kind is WhyKind.NO_JOBS
    assert queue_why([("h1", warn), ("h2", bad), ("h3", ok)]).level is Level.BAD
