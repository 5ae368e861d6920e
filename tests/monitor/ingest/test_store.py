"""store_record: the record, the latest-by-collected_at index, queues and pushes."""

from __future__ import annotations

import datetime as dt
import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.db import connection

from clusterwatch.monitor.core.models import HostReport, JobPush, LatestQueue, LatestReport
from clusterwatch.monitor.ingest import store
from clusterwatch.monitor.ingest.store import (
    AlreadyStored,
    duplicate_of,
    is_latest,
    record_digest,
    store_record,
)
from clusterwatch.monitor.record.slices import host_summary, queue_slice
from tests.monitor.ingest.support import at, new_token
from tests.monitor.records import KEY, example
from tests.support.monitor_console import copy_database

pytestmark = pytest.mark.django_db


def _queues(key: str = KEY) -> set[str]:
    return set(LatestQueue.objects.filter(key=key).values_list("queue", flat=True))


def test_it_stores_the_record_with_its_times_size_and_token() -> None:
    token = new_token()
    from clusterwatch.monitor.ingest import tokens

    row = tokens.find(token[:12])
    received = dt.datetime(2026, 10, 2, 18, 31, tzinfo=dt.timezone.utc)
    report, latest = store_record(KEY, example(collected_at=at(0)), 1234, token=row,
                                  received_at=received)
    assert latest is True
    report.refresh_from_db()
    assert (report.key, report.collected_at, report.received_at, report.size_bytes) == (
        KEY, at(0), received, 1234)
    assert report.token == row


def test_it_moves_latest_only_forward_in_collected_at() -> None:
    first, _ = store_record(KEY, example(collected_at=at(10)), 1)
    late, late_latest = store_record(KEY, example(collected_at=at(5)), 1)
    same_time = example(collected_at=at(10))
    same_time["collect_seconds"] = 2  # another record of the same second
    same, same_latest = store_record(KEY, same_time, 1)
    assert (late_latest, same_latest) == (False, False)
    assert LatestReport.objects.get(key=KEY).report == first
    assert is_latest(first) and not is_latest(late) and not is_latest(same)
    newer, newer_latest = store_record(KEY, example(collected_at=at(11)), 1)
    assert newer_latest and LatestReport.objects.get(key=KEY).report == newer
    assert LatestReport.objects.get(key=KEY).collected_at == at(11)


def test_it_keeps_each_keys_latest_apart() -> None:
    store_record("a01", example("a01", at(10)), 1)
    store_record("b01", example("b01", at(1)), 1)
    assert dict(LatestReport.objects.values_list("key", "collected_at")) == {
        "a01": at(10), "b01": at(1)}


def test_it_replaces_the_queue_index_with_the_latest_records_queues() -> None:
    record = example(collected_at=at(0))
    store_record(KEY, record, 1)
    assert _queues() == {"BNL_PanDA_1", "UM_GREX_PanDA_1", "BNL_ARM_1", "MWT2_UCORE"}
    changed = example(collected_at=at(5))
    del changed["adjustment"]["queues"]["BNL_ARM_1"]
    changed["fetching"]["queues"]["NEW_QUEUE"] = changed["fetching"]["queues"]["BNL_PanDA_1"]
    report, _ = store_record(KEY, changed, 1)
    assert _queues() == {"BNL_PanDA_1", "UM_GREX_PanDA_1", "MWT2_UCORE", "NEW_QUEUE"}
    assert set(LatestQueue.objects.values_list("report_id", flat=True)) == {report.pk}
    # A late record changes nothing in the index.
    store_record(KEY, example(collected_at=at(1)), 1)
    assert _queues() == {"BNL_PanDA_1", "UM_GREX_PanDA_1", "MWT2_UCORE", "NEW_QUEUE"}


def _slices(key: str = KEY) -> dict[str, Any]:
    return dict(LatestQueue.objects.filter(key=key).values_list("queue", "page_slice"))


def test_it_keeps_the_pages_slices_of_the_latest_record_with_the_index() -> None:
    first = example(collected_at=at(0))
    store_record(KEY, first, 1)
    assert _slices() == {queue: queue_slice(first, queue) for queue in _queues()}
    assert LatestReport.objects.get(key=KEY).summary == host_summary(first)
    newer = example(collected_at=at(5))
    newer["fetching"]["queues"]["BNL_PanDA_1"]["attempts"] = 99
    newer["fetching"]["queues"]["NEW_QUEUE"] = newer["fetching"]["queues"]["BNL_PanDA_1"]
    newer["hostname"] = "renamed"
    store_record(KEY, newer, 1)
    late = example(collected_at=at(1))
    late["hostname"] = "late"
    store_record(KEY, late, 1)  # a late record changes no slice
    assert _slices() == {queue: queue_slice(newer, queue) for queue in _queues()}
    assert "NEW_QUEUE" in _slices()
    assert _slices()["BNL_PanDA_1"]["record"]["fetching"]["queues"]["BNL_PanDA_1"][
        "attempts"] == 99
    assert LatestReport.objects.get(key=KEY).summary == host_summary(newer)
    assert host_summary(newer)["record"]["hostname"] == "renamed"


def test_it_leaves_out_queue_names_longer_than_the_column() -> None:
    record = example(collected_at=at(0))
    record["fetching"]["queues"]["Q" * 201] = record["fetching"]["queues"]["BNL_PanDA_1"]
    store_record(KEY, record, 1)
    assert "Q" * 201 not in _queues() and "BNL_PanDA_1" in _queues()


def test_it_records_each_push_once_even_when_records_repeat_it() -> None:
    store_record(KEY, example(collected_at=at(0)), 1)
    again = example(collected_at=at(5))
    again["submission"]["recent_pushes"].append(
        {"at": "2026-10-02T18:29:00Z", "pandaid": 6723499, "queue": "BNL_PanDA_1",
         "workerid": 8812399})
    again["submission"]["recent_pushes"].append(dict(again["submission"]["recent_pushes"][0]))
    store_record(KEY, again, 1)
    assert sorted(JobPush.objects.values_list("pandaid", flat=True)) == [
        6723451, 6723452, 6723499]
    push = JobPush.objects.get(pandaid=6723451)
    assert (push.workerid, push.queue, push.key) == (8812345, "BNL_PanDA_1", KEY)
    assert push.at == dt.datetime(2026, 10, 2, 18, 23, 14, tzinfo=dt.timezone.utc)


def test_it_skips_pushes_no_column_can_hold() -> None:
    record = example(collected_at=at(0))
    record["submission"]["recent_pushes"] = [
        {"at": "2026-10-02T18:29:00Z", "pandaid": 2**63, "queue": "Q", "workerid": 1},
        {"at": "2026-10-02T18:29:00Z", "pandaid": 5, "queue": "Q" * 201, "workerid": 1},
        {"at": "2026-10-02T18:29:00Z", "pandaid": 6, "queue": "Q", "workerid": -(2**63)},
    ]
    store_record(KEY, record, 1)
    assert list(JobPush.objects.values_list("pandaid", flat=True)) == [6]


@pytest.mark.parametrize("key", ["", "-x", "a/b", "k" * 129])
def test_it_refuses_an_invalid_key_before_writing(key: str) -> None:
    with pytest.raises(ValueError, match="not a valid key"):
        store_record(key, example(collected_at=at(0)), 1)
    assert HostReport.objects.count() == 0


def test_it_refuses_a_record_without_a_time_before_writing() -> None:
    record = example()
    record["collected_at"] = "yesterday"
    with pytest.raises(ValueError, match="collected_at"):
        store_record(KEY, record, 1)
    assert HostReport.objects.count() == 0


def test_it_finds_an_identical_record_as_a_duplicate() -> None:
    report, _ = store_record(KEY, example(collected_at=at(0)), 1)
    assert duplicate_of(KEY, at(0), example(collected_at=at(0))) == report
    other = example(collected_at=at(0))
    other["collect_seconds"] = 2
    assert duplicate_of(KEY, at(0), other) is None
    assert duplicate_of("other01", at(0), example(collected_at=at(0))) is None


def test_it_stores_an_identical_record_once_even_past_the_duplicate_check() -> None:
    first, _ = store_record(KEY, example(collected_at=at(0)), 1)
    # What a worker that checked before the first one wrote does next: store it too.
    with pytest.raises(AlreadyStored) as raised:
        store_record(KEY, example(collected_at=at(0)), 1)
    assert raised.value.report == first
    assert HostReport.objects.count() == 1 and LatestReport.objects.get().report == first
    # Equal as JSON is identical, whatever the order its keys came in.
    reordered = dict(reversed(list(example(collected_at=at(0)).items())))
    assert record_digest(reordered) == first.digest
    store_record("other01", example("other01", at(0)), 1)  # the same record of another key


def test_it_never_makes_a_record_dated_past_the_horizon_latest() -> None:
    from django.utils import timezone

    first, _ = store_record(KEY, example(collected_at=at(0)), 1)
    ahead = timezone.now() + dt.timedelta(seconds=settings.MAX_CLOCK_SKEW_S + 60)
    far, far_latest = store_record(KEY, example(collected_at=ahead.replace(microsecond=0)), 1)
    assert far_latest is False and LatestReport.objects.get().report == first
    assert HostReport.objects.filter(pk=far.pk).exists()  # kept, like every record


def test_any_real_record_takes_latest_from_one_dated_past_the_horizon() -> None:
    store_record(KEY, example(collected_at=at(10)), 1)
    frozen = HostReport.objects.create(
        key=KEY, collected_at=dt.datetime(2999, 1, 1, tzinfo=dt.timezone.utc), size_bytes=1,
        record=example(collected_at=dt.datetime(2999, 1, 1, tzinfo=dt.timezone.utc)))
    LatestReport.objects.filter(key=KEY).update(report=frozen, collected_at=frozen.collected_at)
    late, late_latest = store_record(KEY, example(collected_at=at(5)), 1)
    assert late_latest is True and LatestReport.objects.get().report == late
    assert _queues() == {"BNL_PanDA_1", "UM_GREX_PanDA_1", "BNL_ARM_1", "MWT2_UCORE"}


def test_it_finds_a_duplicate_of_a_record_stored_before_digests() -> None:
    legacy, _ = store_record(KEY, example(collected_at=at(0)), 1)
    HostReport.objects.filter(pk=legacy.pk).update(digest=None)
    assert duplicate_of(KEY, at(0), example(collected_at=at(0))) == legacy


def _shared_cache_sqlite() -> bool:
    # The test database on SQLite is in memory with a shared cache, where a second writer
    # fails at once ("table is locked") instead of waiting: no stand-in for a real file.
    return connection.vendor == "sqlite" and connection.is_in_memory_db()


@pytest.mark.django_db(transaction=True)
def test_it_keeps_the_newest_as_latest_under_concurrent_posts() -> None:
    """Threads store records of one key in scrambled order; latest ends at the max time."""
    if _shared_cache_sqlite():
        pytest.skip("needs a real database server (the PostgreSQL pass); the SQLite file "
                    "case is the multi-process test below")
    times = [at(minute) for minute in range(24)]
    order = times[1::2][::-1] + times[0::2]  # odd minutes newest-first, then even ones
    halves = [order[0::2], order[1::2]]
    errors: list[BaseException] = []
    start = threading.Barrier(len(halves))

    def worker(moments: list[dt.datetime]) -> None:
        try:
            start.wait()
            for moment in moments:
                store_record(KEY, example(collected_at=moment), 1)
        except BaseException as exc:  # reported in the main thread
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(half,)) for half in halves]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors, errors
    assert HostReport.objects.count() == len(times)
    latest = LatestReport.objects.get(key=KEY)
    assert latest.collected_at == max(times)
    assert latest.report.collected_at == max(times)
    assert set(LatestQueue.objects.values_list("report_id", flat=True)) == {latest.report_id}


def test_a_first_row_committed_just_after_the_update_looked_is_compared_with(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Another worker's older first row appears between the UPDATE that found no row and
    what follows it: the newer record must still become the latest (CI once saw the older
    one stay when the code only asked whether a row existed)."""
    original_move = store._move_latest
    calls: list[bool] = []

    def update_then_another_worker_commits(*args: Any) -> bool:
        moved = original_move(*args)
        if not calls:
            calls.append(moved)
            older = HostReport.objects.create(
                key="fresh02", collected_at=at(1), received_at=at(1), size_bytes=1,
                record=example("fresh02", at(1)), digest="d" * 64)
            LatestReport.objects.create(key="fresh02", report=older, collected_at=at(1))
        return moved

    monkeypatch.setattr(store, "_move_latest", update_then_another_worker_commits)
    report, latest = store_record("fresh02", example("fresh02", at(2)), 1)
    assert calls == [False]  # the window was really taken
    assert latest is True
    row = LatestReport.objects.get(key="fresh02")
    assert (row.report, row.collected_at) == (report, at(2))


def test_an_older_record_does_not_take_a_first_row_committed_meanwhile(
        monkeypatch: pytest.MonkeyPatch) -> None:
    original_move = store._move_latest
    newer: list[HostReport] = []

    def update_then_another_worker_commits(*args: Any) -> bool:
        moved = original_move(*args)
        if not newer:
            newer.append(HostReport.objects.create(
                key="fresh03", collected_at=at(3), received_at=at(3), size_bytes=1,
                record=example("fresh03", at(3)), digest="e" * 64))
            LatestReport.objects.create(key="fresh03", report=newer[0], collected_at=at(3))
        return moved

    monkeypatch.setattr(store, "_move_latest", update_then_another_worker_commits)
    _, latest = store_record("fresh03", example("fresh03", at(2)), 1)
    assert latest is False
    assert LatestReport.objects.get(key="fresh03").report == newer[0]


@pytest.mark.django_db(transaction=True)
def test_it_survives_two_first_records_of_a_key_at_once() -> None:
    """Both threads may find no LatestReport row and race to create it."""
    if _shared_cache_sqlite():
        pytest.skip("needs a real database server (the PostgreSQL pass)")
    results: list[Any] = []
    start = threading.Barrier(2)

    def worker(minute: int) -> None:
        try:
            start.wait()
            results.append(store_record("fresh01", example("fresh01", at(minute)), 1))
        except BaseException as exc:
            results.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(minute,)) for minute in (1, 2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert all(isinstance(result, tuple) for result in results), results
    assert LatestReport.objects.get(key="fresh01").collected_at == at(2)


def test_it_keeps_the_newest_as_latest_with_several_worker_processes(
        tmp_path: Path, migrated_sqlite: Path) -> None:
    """Like gunicorn workers on the embedded SQLite file: WAL, busy timeout, real locks."""
    database = copy_database(migrated_sqlite, tmp_path / "monitor.sqlite3")
    env = {**os.environ, "CLUSTERWATCH_DATA_DIR": str(tmp_path),
           "CLUSTERWATCH_DATABASE_URL": f"sqlite:///{database}",
           "DJANGO_SETTINGS_MODULE": "clusterwatch.monitor.site.settings",
           "CLUSTERWATCH_SECRET_KEY": "tests-only"}
    root = Path(__file__).resolve().parents[3]
    minutes = list(range(30))
    order = minutes[1::2][::-1] + minutes[0::2]
    workers = [subprocess.Popen([sys.executable, "-m", "tests.monitor.ingest.worker", KEY,
                                 *map(str, order[part::3])], env=env, cwd=root)
               for part in range(3)]
    assert [worker.wait(timeout=120) for worker in workers] == [0, 0, 0]
    with sqlite3.connect(database) as db:
        reports = db.execute("SELECT COUNT(*) FROM monitor_hostreport").fetchone()[0]
        latest_id, latest_at = db.execute(
            "SELECT report_id, collected_at FROM monitor_latestreport").fetchone()
        newest_id = db.execute("SELECT id FROM monitor_hostreport ORDER BY collected_at DESC "
                               "LIMIT 1").fetchone()[0]
        queue_reports = {row[0] for row in db.execute(
            "SELECT DISTINCT report_id FROM monitor_latestqueue")}
    assert reports == len(minutes)
    assert latest_id == newest_id
    assert latest_at.startswith("2026-10-02 18:59:00")
    assert queue_reports == {latest_id}
