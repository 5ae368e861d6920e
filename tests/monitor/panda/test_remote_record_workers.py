"""remote_workers: worker counts from the PanDA server's copy of the harvester's workers
(sticky terminal statuses, the seven-day live cutoff, windows, duplicates, other ids)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from clusterwatch.monitor.panda.remote.workers import LIVE_FOR, summarise_workers
from clusterwatch.monitor.panda.server_rows import SourceFailed
from clusterwatch.reporter.harvester_db import CANDIDATE_LIMIT
from tests.monitor.panda.remote_rows import (
    EPIC,
    GPU,
    HARVESTER,
    NOW,
    ServerWorkers,
    ago,
    naive,
    worker,
)

SINCE = NOW - dt.timedelta(minutes=5)


def parts(rows: Any, since: dt.datetime = SINCE, now: dt.datetime = NOW) -> dict[str, Any]:
    return summarise_workers(HARVESTER, rows, [], now, since).parts


def test_it_keeps_counting_a_worker_by_the_terminal_status_the_server_kept() -> None:
    server = ServerWorkers()
    server.update(ago(minutes=50), 1, "running", starttime=ago(hours=2))
    server.update(ago(minutes=4), 1, "cancelled", endtime=ago(minutes=4))
    # The harvester's later word is dropped while the cancelled row is under 3 hours old.
    server.update(ago(minutes=2), 1, "finished")
    server.update(ago(minutes=1), 1, "running")
    found = parts(server.rows())
    assert found["workers_now"] == {}
    assert found["workers_ended"][EPIC]["by_status"] == {"cancelled": 1}
    assert found["workers_not_finished"][EPIC]["workers"] == 1


def test_it_takes_a_new_status_the_server_took_after_three_hours() -> None:
    server = ServerWorkers()
    server.update(ago(hours=5), 1, "failed", endtime=ago(hours=5))
    server.update(ago(minutes=1), 1, "running")  # the old row was over 3 hours old
    assert parts(server.rows())["workers_now"] == {EPIC: {"running": 1}}


def test_it_stops_counting_a_worker_live_seven_days_after_its_submission() -> None:
    found = parts([
        worker(1, "running", submittime=naive(NOW - LIVE_FOR)),
        worker(2, "running", submittime=naive(NOW - LIVE_FOR - dt.timedelta(seconds=1))),
        worker(3, "idle", submittime=None, lastupdate=ago(days=8)),  # no submission time
        worker(4, "submitted", submittime=None, lastupdate=ago(days=6)),
        worker(5, "finished", submittime=ago(days=9), endtime=ago(days=8)),
    ])
    assert found["workers_now"] == {EPIC: {"running": 1, "submitted": 1}}
    assert found["workers_overdue"] == {EPIC: {"running": 1, "idle": 1}}


def test_it_counts_a_worker_once_by_its_latest_row() -> None:
    found = parts([worker(1, "running", lastupdate=ago(minutes=1)),
                   worker(1, "submitted", lastupdate=ago(minutes=9)),
                   worker(2, "running", lastupdate=ago(minutes=8))])
    assert found["workers_now"] == {EPIC: {"running": 2}}


def test_it_counts_only_this_harvesters_workers() -> None:
    found = parts([worker(1, "running"), worker(2, "running", harvesterid="BNL_osg_harvester_1")])
    assert found["workers_now"] == {EPIC: {"running": 1}}


def test_it_counts_a_row_dated_ahead_of_its_clock_once_in_the_window_that_reaches_it() -> None:
    ahead = [worker(1, "running", submittime=naive(NOW + dt.timedelta(seconds=30)),
                    starttime=naive(NOW + dt.timedelta(seconds=40)))]
    now_run = summarise_workers(HARVESTER, ahead, [EPIC], NOW, SINCE)
    later = NOW + dt.timedelta(minutes=5)
    next_run = summarise_workers(HARVESTER, ahead, [EPIC], later, NOW)
    assert now_run.submission["queues"][EPIC]["workers_submitted"] == 0
    assert now_run.parts["worker_starts"] == {}
    assert now_run.parts["workers_now"] == {EPIC: {"running": 1}}  # live whatever its date
    assert next_run.submission["queues"][EPIC]["workers_submitted"] == 1
    assert next_run.parts["worker_starts"] == {EPIC: {"started": 1,
                                                       "by_status": {"running": 1}}}


def test_it_counts_the_windows_edges_as_half_open() -> None:
    rows = [worker(1, "finished", starttime=naive(SINCE - dt.timedelta(hours=1)),
                   endtime=naive(SINCE)),
            worker(2, "finished", starttime=naive(SINCE - dt.timedelta(hours=2)),
                   endtime=naive(NOW))]
    assert parts(rows)["workers_ended"] == {EPIC: {"by_status": {"finished": 1},
                                                   "finished_median_run_s": 7500}}


def test_it_names_workers_without_a_site_as_the_reporter_does() -> None:
    found = parts([worker(1, "running", site=None),
                   worker(2, "failed", site=None, endtime=ago(minutes=1))])
    assert found["workers_now"] == {"(null)": {"running": 1}}
    assert list(found["workers_ended"]) == ["(null)"]
    assert list(found["workers_not_finished"]) == ["(null)"]


def test_it_groups_the_workers_not_finished_by_the_harvesters_diagnostic() -> None:
    exit_73 = "Payload execution error: returned non-zero 73"
    found = parts([
        worker(1, "failed", endtime=ago(hours=2), diagmessage=exit_73, batchid="49000001",
               nodeid="nid001234", computingelement="perlmutter",
               batchlog="https://example.invalid/logs/1.out"),
        worker(2, "failed", endtime=ago(hours=3), diagmessage=f"  {exit_73}\n"),
        worker(3, "finished", endtime=ago(hours=1), nativeexitcode=1),
        worker(4, "finished", endtime=ago(hours=1), nativeexitcode=0),
        worker(5, "finished", endtime=ago(hours=1), nativeexitcode=None),
        worker(6, "cancelled", endtime=ago(hours=25), diagmessage=exit_73),  # over 24 h
        worker(7, "missed", site=GPU, endtime=ago(minutes=1), diagmessage="x" * 600),
    ])["workers_not_finished"]
    epic = found[EPIC]
    assert epic["workers"] == 3
    group = epic["reasons"][exit_73]
    assert (group["count"], group["source"]) == (2, "harvester_diag")
    assert group["examples"][0] == {"worker": 1, "batch_id": "49000001", "node": "nid001234",
                                    "ce": "perlmutter",
                                    "log_url": "https://example.invalid/logs/1.out"}
    assert epic["reasons"]["no reason found"]["source"] == "none"
    assert list(found[GPU]["reasons"]) == ["x" * 500]


def test_it_gives_submission_entries_to_configured_queues_without_workers() -> None:
    found = summarise_workers(HARVESTER, [], [GPU, EPIC], NOW, SINCE)
    assert list(found.submission["queues"]) == [EPIC, GPU]
    assert found.submission["queues"][GPU]["workers_submitted"] == 0
    assert found.running == {} and found.last_submitted == {}


def test_it_makes_every_part_the_error_when_the_table_was_not_read() -> None:
    found = summarise_workers(HARVESTER, SourceFailed("OperationalError: timeout"), [EPIC],
                              NOW, SINCE)
    assert set(found.parts) == {"workers_now", "workers_overdue", "worker_starts",
                                "workers_ended", "workers_not_finished"}
    assert all(part == {"error": "harvester_workers: OperationalError: timeout"}
               for part in found.parts.values())
    assert found.submission == {"error": "harvester_workers: OperationalError: timeout"}
    assert found.running is None


def test_it_says_when_more_workers_did_not_finish_than_it_reads() -> None:
    """The reporter's limit (the newest 2,000 of 24 hours) and its `workers_not_finished_read`."""
    rows = [worker(n, "failed", endtime=naive(NOW - dt.timedelta(seconds=60 + n)),
                   diagmessage="held" if n % 2 == 0 else "removed")
            for n in range(1, CANDIDATE_LIMIT + 4)]
    found = summarise_workers(HARVESTER, rows, [EPIC], NOW, SINCE).parts
    assert found["workers_not_finished_read"] == {
        "window_s": 86400, "workers": CANDIDATE_LIMIT, "limit": CANDIDATE_LIMIT,
        "limit_reached": True}
    reasons = found["workers_not_finished"][EPIC]["reasons"]
    assert {reason: group["count"] for reason, group in reasons.items()} == {
        "held": 1000, "removed": 1000}  # workers 1-2000, the newest
    exactly = summarise_workers(HARVESTER, rows[:CANDIDATE_LIMIT], [EPIC], NOW, SINCE).parts
    assert exactly["workers_not_finished_read"]["limit_reached"] is False
