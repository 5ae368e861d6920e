"""The queue page's panel of a remote harvester (a record built from the PanDA server rows and
stored through the ingest path, as the remote_harvester_report command stores it)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.test import Client

from clusterwatch.monitor.core.models import LatestQueue
from clusterwatch.monitor.pages.queue_page import harvester_panel
from clusterwatch.monitor.pages.queue_query import serving
from clusterwatch.monitor.pages.remote_panel import kinds_for_queue, starts_tally, worker_tally
from clusterwatch.monitor.pages.stored import StoredRecord
from clusterwatch.monitor.panda.remote.run import store
from clusterwatch.monitor.record.harvester_db import harvester_db
from clusterwatch.monitor.record.remote_sections import DialogKind
from tests.monitor.panda.remote_rows import (
    EPIC,
    GPU,
    KEY,
    NOW,
    PUSH,
    remote_record,
)
from tests.support.page_text import text_of

MINE = frozenset({EPIC, GPU, PUSH})


def kind(*queues: str, text: str = "k") -> DialogKind:
    return DialogKind(module="submitter", level="ERROR", kind=text, queues=queues)


def test_it_shows_a_kind_naming_the_queue_or_none_of_the_harvesters_queues() -> None:
    own, both, general, other = kind(EPIC), kind(EPIC, GPU), kind(), kind(GPU)
    assert kinds_for_queue([own, both, general, other], EPIC, MINE) == (own, both, general)
    assert kinds_for_queue([own, both, general, other], GPU, MINE) == (both, general, other)
    assert kinds_for_queue([own, both, general, other], PUSH, MINE) == (general,)


def test_it_treats_a_name_that_is_none_of_the_harvesters_queues_as_naming_none() -> None:
    # A hostile or older record naming a queue the harvester does not have: no queue of this
    # harvester claims the message, so every queue shows it rather than none.
    stranger = kind("SOMEONE_ELSES_QUEUE")
    assert kinds_for_queue([stranger], EPIC, MINE) == (stranger,)
    assert kinds_for_queue([kind(GPU, "SOMEONE_ELSES_QUEUE")], EPIC, MINE) == ()


def test_it_builds_the_same_remote_panel_from_the_slice_as_from_the_whole_record() -> None:
    record = remote_record()
    whole = harvester_panel(StoredRecord(KEY, 1, record, NOW, NOW), EPIC, NOW, 300)
    assert whole.remote is not None and whole.remote.pull_mode
    assert whole.remote.instance.version == "0.7.5"
    assert whole.remote.limit is not None and whole.remote.limit.value == 6
    assert [node.host for node in whole.remote.login_nodes] == [
        "login31.chn.perlmutter.nersc.gov", "login32.chn.perlmutter.nersc.gov"]
    assert {name for name, _ in whole.remote.log_only} == {
        "fetching", "adjustment", "daemons", "processes", "failed_calls.communicator",
        "failed_calls.propagator"}


@pytest.mark.django_db
def test_it_serves_the_panel_from_the_stored_slice_as_from_the_whole_record() -> None:
    record = remote_record()
    assert store(KEY, record, 1000) is True
    assert set(LatestQueue.objects.values_list("queue", flat=True)) >= {EPIC, GPU, PUSH}
    for queue in (EPIC, GPU, PUSH):
        (sliced,) = serving(queue)
        assert sliced.record != record  # a slice, not the record
        assert (harvester_panel(sliced, queue, NOW, 300)
                == harvester_panel(StoredRecord(KEY, sliced.report_id, record, sliced.collected_at,
                                                sliced.received_at), queue, NOW, 300))


def test_a_reporters_record_has_no_remote_panel() -> None:
    from tests.monitor.records import QUEUE, example
    panel = harvester_panel(StoredRecord("h", 1, example(), NOW, NOW), QUEUE, NOW, 300)
    assert panel.remote is None


@pytest.mark.django_db
def test_it_shows_the_remote_harvester_on_its_queue_pages(operator: Client) -> None:
    assert store(KEY, remote_record(), 1000) is True
    epic = text_of(operator.get(f"/queues/{EPIC}/"))
    assert "Remote harvester Perlmutter_test_1 (built from the PanDA server)" in epic
    assert "Last heartbeat 2026-10-02 18:26:00Z" in epic and "(240 s before collection)" in epic
    assert "Version 0.7.5 (2026-08-03T10:22:06)" in epic
    assert "Queue status online" in epic and "NoJob / self" in epic
    assert "nQueueLimitWorkerRatio 50% of 12 running = 6 -&gt; min(100, 6) = 6" in epic
    assert "run mode self: to_submit is 0 here" in epic
    assert "login31.chn.perlmutter.nersc.gov" in epic and "login32.chn" in epic
    assert "its pilots fetch their own jobs" in epic
    assert "No fetch of this queue" not in epic
    assert "log freshness is not known" in epic and "its process table is not readable" in epic
    # Dialogs: EPIC's own kind and the proxy message, never the GPU-only one.
    assert "submit_workers &lt;site=NERSC_Perlmutter_epic&gt; failed to submit" in epic
    assert "proxy lifetime # hours below #" in epic
    assert "has no GPU partition left" not in epic
    gpu = text_of(operator.get(f"/queues/{GPU}/"))
    assert "has no GPU partition left" in gpu and "proxy lifetime" in gpu
    assert "failed to submit" not in gpu and "Queue status brokeroff" in gpu
    push = text_of(operator.get(f"/queues/{PUSH}/"))
    assert "Queue status offline (not active)" in push and "OneToOne / self" in push
    assert "nQueueLimitWorkerRatio 50 not applied: OneToOne queue" in push
    assert "its pilots fetch their own jobs" not in push


@pytest.mark.django_db
def test_it_shows_a_remote_record_missing_its_heartbeat_and_dialogs(operator: Client) -> None:
    record = remote_record()
    record["instance"] = {"error": "no harvester_instances row for 'X'", "harvester_id": "X"}
    record["dialogs"] = {"error": "harvester_dialogs: OperationalError: timeout"}
    record["collected_at"] = (NOW + dt.timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert store(KEY, record, 1000) is True
    page = text_of(operator.get(f"/queues/{EPIC}/"))
    assert "instance: no harvester_instances row for &#x27;X&#x27;" in page
    assert "dialogs: harvester_dialogs: OperationalError: timeout" in page
    assert "Last heartbeat —" in page


def why_of(record: dict[str, Any], queue: str) -> str:
    return harvester_panel(StoredRecord(KEY, 1, record, NOW, NOW), queue, NOW, 300).why.text


def test_it_says_why_from_what_the_server_knows_never_from_the_unreadable_fetcher_log() -> None:
    assert why_of(remote_record(), EPIC) == (
        "a pull-mode queue: its pilots fetch their own jobs; 2 workers submitted in the last "
        "interval")
    assert why_of(remote_record(), PUSH) == (
        "queue status offline: the harvester runs no workers for it")
    silent = remote_record()
    silent["instance"]["heartbeat_age_s"] = 3600
    assert why_of(silent, EPIC) == "no heartbeat from the harvester for 1 h"
    absent = remote_record(instance={"error": "no harvester_instances row for 'X'"})
    assert why_of(absent, EPIC) == "no heartbeat: no harvester_instances row for 'X'"
    stale = harvester_panel(StoredRecord(KEY, 1, remote_record(), NOW, NOW), EPIC,
                            NOW + dt.timedelta(hours=1), 300)
    assert stale.why.text.startswith("harvester silent for 1 h: data is stale (its last "
                                     "record said: a pull-mode queue")


@pytest.mark.django_db
def test_it_shows_the_workers_started_and_overdue_on_each_queue(operator: Client) -> None:
    assert store(KEY, remote_record(), 1000) is True  # the page reads the queue's slice
    epic = text_of(operator.get(f"/queues/{EPIC}/"))
    # Worker 203 is still 'running' eight days after its submission: overdue, not live.
    assert "Workers started in the interval none" in epic
    assert "Workers overdue 1 running" in epic
    gpu = text_of(operator.get(f"/queues/{GPU}/"))
    assert "Workers started in the interval 1 running" in gpu
    assert "Workers overdue none" in gpu


def test_it_words_a_worker_part_that_is_missing_failed_or_malformed() -> None:
    def tallies(database: dict[str, Any]) -> tuple[str, str]:
        typed = harvester_db(database)
        sites = typed.queue_sites(EPIC)
        return (starts_tally(typed.worker_starts, sites),
                worker_tally(typed.workers_overdue, sites))

    limits = {"launch_limits": {EPIC: {"siteName": EPIC}}}
    assert tallies(limits) == ("not in this record", "not in this record")
    failed = {**limits, "workers_started": {"error": "harvester_workers: timeout"},
              "workers_overdue": {"error": "harvester_workers: timeout"}}
    assert tallies(failed) == ("error: harvester_workers: timeout",) * 2
    hostile = {**limits, "workers_overdue": {EPIC: {"running": 2, "idle": True, "x": "3",
                                                    "submitted": 5}, GPU: {"running": 9}}}
    assert tallies(hostile)[1] == "5 submitted, 2 running"
    assert tallies({**limits, "workers_overdue": []})[1] == "none"
    assert tallies({**limits, "workers_overdue": None})[1] == "none"


def test_it_counts_the_workers_of_the_queues_site_name_too() -> None:
    database = harvester_db({"launch_limits": {EPIC: {"siteName": "NERSC"}},
                             "workers_overdue": {EPIC: {"running": 1}, "NERSC": {"running": 2},
                                                 GPU: {"running": 9}}})
    assert worker_tally(database.workers_overdue, database.queue_sites(EPIC)) == "3 running"
