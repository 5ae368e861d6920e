from __future__ import annotations

import datetime as dt

from clusterwatch.monitor.pages.failed_calls import failed_calls, last_failed_call
from clusterwatch.monitor.pages.queue_logs import adjustment, fetching, submission
from clusterwatch.monitor.pages.queue_page import harvester_panel, queue_page
from clusterwatch.monitor.pages.queue_rows import limits_by_type, reason_examples
from clusterwatch.monitor.pages.queue_workers import Example, LaunchLimits, Reason, queue_workers
from clusterwatch.monitor.pages.stored import StoredRecord
from clusterwatch.monitor.pages.why import Level
from clusterwatch.monitor.record.host_record import parse_record
from tests.monitor.records import (
    QUEUE,
    SSL_MESSAGE,
    all_fetches_failing,
    as_key,
    example,
    parse,
    recent,
    with_database,
)

COLLECTED = parse(example()["collected_at"])
NOW = COLLECTED + dt.timedelta(minutes=1)


def test_it_reads_the_fetching_of_a_queue_with_times() -> None:
    fetch = fetching(parse_record(example()), QUEUE, NOW)
    assert fetch.present and fetch.error is None
    assert (fetch.attempts, fetch.failed, fetch.jobs_asked, fetch.jobs_got) == (6, 4, 180, 47)
    assert fetch.errors == [("SSLError", 2), ("ReadTimeout", 1), ("database timeout", 1)]
    assert fetch.last is not None and fetch.last.outcome == "OK" and not fetch.last.failed
    assert (fetch.last.asked, fetch.last.got, fetch.last.label) == (20, 12, "managed")
    assert fetch.last.at is not None and fetch.last.at.utc == "2026-10-02 18:27:05Z"
    assert fetch.last_got_jobs is not None and fetch.source == 'fetching.queues["BNL_PanDA_1"]'
    assert not fetch.all_failed


def test_it_tells_a_no_jobs_answer_from_a_failure() -> None:
    fetch = fetching(parse_record(example()), "UM_GREX_PanDA_1", NOW)
    assert fetch.last is not None and fetch.last.no_jobs and not fetch.last.failed
    failing = fetching(parse_record(all_fetches_failing(example())), QUEUE, NOW)
    assert failing.all_failed and failing.last is not None and failing.last.failed
    assert failing.last.error_class == "SSLError" and failing.errors == [("SSLError", 6)]


def test_it_says_a_queue_without_fetch_lines_is_absent_not_zero() -> None:
    fetch = fetching(parse_record(example()), "MWT2_UCORE", NOW)
    assert not fetch.present and fetch.last is None and fetch.attempts == 0


def test_it_reads_submission_and_the_queues_own_pushes_newest_first() -> None:
    record = example()
    record["submission"]["recent_pushes"].append(
        {"at": "2026-10-02T18:25:00Z", "pandaid": 1, "queue": "OTHER", "workerid": 2})
    submit = submission(parse_record(record), QUEUE, NOW)
    assert (submit.workers_submitted, submit.submit_failures, submit.job_chunks) == (2, 2, 3)
    assert submit.workers_status == [("nQueue", 12), ("nReady", 1), ("nRunning", 80),
                                     ("nNewWorkers", 0)]
    assert submit.workers_status_at is not None
    assert [push.pandaid for push in submit.pushes] == [6723451, 6723452]


def test_it_keeps_the_failed_call_lines_with_their_times() -> None:
    calls = failed_calls(parse_record(example()), NOW)
    assert [call.daemon for call in calls] == ["communicator", "propagator"]
    communicator = calls[0]
    assert communicator.failed == 4
    assert communicator.by_call_and_class[0] == ("/api/v1/pilot/acquire_jobs SSLError", 2)
    assert communicator.last_line is not None and "SSLError" in communicator.last_line
    newest = last_failed_call(calls)
    assert newest is communicator  # 18:24:05 is later than the propagator's 18:23:08


def test_it_reads_the_adjusters_limit_and_what_it_was_set_against() -> None:
    adjust = adjustment(parse_record(example()), QUEUE, NOW)
    assert adjust.present and adjust.limit == 400 and adjust.limit_name == "max_workers"
    assert adjust.against == [("n_queue", "5"), ("n_ready", "0"), ("n_running", "412")]
    assert adjust.message is not None and adjust.message.startswith("No n_new_workers")
    assert adjustment(parse_record(example()), "MWT2_UCORE",
                      NOW).against == [("n_activated", "7"),
                                                               ("queue_limit", "None")]


def test_it_reads_the_harvester_database_for_the_queue() -> None:
    db = queue_workers(parse_record(with_database(example())), QUEUE, NOW)
    assert db.error is None
    assert db.launch_limits.found and db.launch_limits.max_workers == 400
    assert ("nQueueLimitWorker", 50) in db.launch_limits.limits
    assert db.launch_limits.by_type[1] == ("managed/SCORE", [50, 300, None, 0])
    assert db.launch_limits.job_fetch_time is not None
    assert db.workers_now.by_status == [("running", 412), ("submitted", 5)]
    assert db.workers_now.total == 417
    assert db.workers_ended.by_status == [("finished", 30), ("failed", 2)]
    assert db.workers_ended.median_run == "1 h 30 min"
    reason = db.not_finished.reasons[0]
    assert reason.text.startswith("Job was aborted.") and reason.count == 2
    assert reason.source == "condor_event_log"
    assert reason.examples[0].link == "https://pandaharvester01/condor_logs/grid.1234.0.log"
    assert reason.examples[1].link is None  # a javascript: URL is never a link
    assert reason.examples[1].log_url == "javascript:alert(1)"


def test_it_shows_each_database_part_error() -> None:
    db = queue_workers(parse_record(example()), QUEUE, NOW)
    for part in (db.launch_limits, db.workers_now, db.workers_ended, db.not_finished):
        assert part.error == "cannot read /nonexist: No such file or directory"
        assert not part.found


def test_it_says_when_the_database_has_nothing_for_the_queue() -> None:
    db = queue_workers(parse_record(with_database(example(), queue="ELSEWHERE")), QUEUE, NOW)
    assert db.launch_limits.error is None and not db.launch_limits.found
    assert not db.workers_now.found and not db.not_finished.found


def test_it_finds_workers_under_the_queues_site_name() -> None:
    record = with_database(example())
    database = record["harvester_db"]
    database["launch_limits"][QUEUE]["siteName"] = "BNL"
    database["workers_now"] = {"BNL": {"running": 3}}
    assert queue_workers(parse_record(record), QUEUE, NOW).workers_now.total == 3


def test_it_groups_raw_candidates_by_the_harvesters_diagnostic() -> None:
    record = with_database(example())
    database = record["harvester_db"]
    del database["workers_not_finished"]
    database["workers_not_finished_candidates"] = [
        {"workerID": 1, "computingSite": QUEUE, "diagMessage": "Condor HoldReason: memory"},
        {"workerID": 2, "computingSite": QUEUE, "diagMessage": "Condor HoldReason: memory"},
        {"workerID": 3, "computingSite": QUEUE, "diagMessage": None},
        {"workerID": 4, "computingSite": "OTHER", "diagMessage": "x"},
    ]
    not_finished = queue_workers(parse_record(record), QUEUE, NOW).not_finished
    assert not_finished.workers == 3
    assert [(r.text, r.count) for r in not_finished.reasons] == [
        ("Condor HoldReason: memory", 2), ("no reason found", 1)]


def test_it_builds_a_panel_without_failing_on_a_broken_record() -> None:
    broken = {"fetching": {"queues": {QUEUE: {"last": "nonsense", "errors": [1]}}},
              "submission": {"queues": {QUEUE: {"workers_status": 5}}, "recent_pushes": 3},
              "harvester_db": {"launch_limits": {QUEUE: {"by_type": []}}}, "interval": []}
    panel = harvester_panel(StoredRecord("k", 1, broken, COLLECTED), QUEUE, NOW, 300)
    assert panel.fetching.last is None and panel.fetching.errors == []
    assert panel.submission.workers_status == [] and panel.submission.pushes == []
    assert panel.why.text


def test_it_shows_each_harvester_serving_the_queue() -> None:
    now = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.timezone.utc)
    one = recent(example(), now - dt.timedelta(minutes=2))
    two = as_key(recent(all_fetches_failing(example()), now - dt.timedelta(minutes=1)),
                 "pandaharvester02")
    page = queue_page(QUEUE, [StoredRecord("pandaharvester02", 2, two, parse(two["collected_at"])),
                              StoredRecord("pandaharvester01", 1, one, parse(one["collected_at"]))],
                      now, 300)
    assert [panel.key for panel in page.panels] == ["pandaharvester01", "pandaharvester02"]
    assert page.several
    assert page.why.text.startswith("pandaharvester01: new workers blocked")
    assert ("pandaharvester02: every fetch in the last interval failed with SSLError"
            in page.why.text)
    assert page.why.level is Level.BAD and page.why.error_class == "SSLError"
    assert (page.why.line or "").endswith(SSL_MESSAGE)


def test_it_escapes_the_precomputed_example_and_limit_rows() -> None:
    reason = Reason("r", 2, "condor_event_log", [
        Example("<b>1</b>", None, None, None, "javascript:alert(1)"),
        Example("2", "7.0", "n", "ce", "https://h/a?x=1&y=<2>")])
    assert str(reason_examples(reason)) == (
        "<li>worker &lt;b&gt;1&lt;/b&gt;, batch ?, no node, no CE, javascript:alert(1)</li>"
        '<li>worker 2, batch 7.0, n, ce, <a href="https://h/a?x=1&amp;y=&lt;2&gt;" '
        'rel="noreferrer">log</a></li>')
    limits = LaunchLimits("s", None, True, by_type=[("<i>A</i>", [1, None, 3, 4])])
    assert str(limits_by_type(limits)) == (
        '<tr><td>&lt;i&gt;A&lt;/i&gt;</td><td class="num">1</td><td class="num">—</td>'
        '<td class="num">3</td><td class="num">4</td></tr>')
