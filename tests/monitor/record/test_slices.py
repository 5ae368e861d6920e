"""Pages read the slices of records stored at ingest (`record.slices`): what they show must be
the same as from whole records."""

from __future__ import annotations

import copy
import datetime as dt
import importlib
from typing import Any, Callable

import pytest
from django.apps import apps
from django.utils import timezone

from clusterwatch.monitor.core.models import HostReport, LatestQueue, LatestReport
from clusterwatch.monitor.pages.hosts_page import host_row
from clusterwatch.monitor.pages.hosts_query import latest_slim_records
from clusterwatch.monitor.pages.queue_page import queue_page
from clusterwatch.monitor.pages.queue_query import serving
from clusterwatch.monitor.pages.stored import StoredRecord
from clusterwatch.monitor.record.slices import (
    REASONS_SHOWN,
    SLICE_VERSION,
    host_summary,
    queue_slice,
    sliced,
)
from tests.monitor.records import (
    QUEUE,
    all_fetches_failing,
    as_key,
    example,
    no_jobs,
    recent,
    store,
    with_database,
)

pytestmark = pytest.mark.django_db


def _without(*sections: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def change(record: dict[str, Any]) -> dict[str, Any]:
        for section in sections:
            record.pop(section, None)
        return record
    return change


def _broken(record: dict[str, Any]) -> dict[str, Any]:
    record["fetching"] = {"error": "42", "read": {"error": '{"looks": "like json"}'}}
    record["submission"] = "not an object"
    record["daemons"] = {"error": "cannot list"}
    record["harvester_db"] = {"error": 17, "queue_config_error": "no such file",
                              "workers_now": {"error": "<b>bold</b>"}}
    record["health"]["volumes"] = {"/": {"error": "statvfs"}, "/var": {"same_as": "/"}}
    record["delivery"] = {"backlog": 3, "dropped": 2, "set_aside": 1,
                          "reasons": {"http 400": 1}, "last_error": "HTTP 503",
                          "last_error_at": "2026-10-02T18:00:00Z"}
    return record


VARIANTS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "example": lambda record: record,
    "database read": with_database,
    "fetches failing": all_fetches_failing,
    "broken sources": _broken,
    "sections missing": _without("fetching", "harvester_db", "delivery", "hostname"),
    "empty database section": lambda record: dict(record, harvester_db={}),
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_it_reads_the_same_host_row_from_the_slim_record(variant: str) -> None:
    now = timezone.now()
    record = VARIANTS[variant](copy.deepcopy(recent(example(), now - dt.timedelta(minutes=2))))
    store(record, key="h1")
    (slim,) = latest_slim_records()
    full = LatestReport.objects.select_related("report").get(key="h1").report
    assert slim.report_id == full.pk and slim.collected_at == full.collected_at
    from_slim = host_row("h1", slim.report_id, slim.record, slim.collected_at, [], now, 300)
    from_full = host_row("h1", full.pk, full.record, full.collected_at, [], now, 300)
    assert from_slim == from_full
    assert len(str(slim.record)) < len(str(full.record))


def test_it_reads_the_hosts_overview_from_the_summaries_in_one_query(
    django_assert_num_queries: Any,
) -> None:
    now = timezone.now()
    for key in ("h1", "h2", "h3"):
        store(as_key(recent(example(), now - dt.timedelta(minutes=2)), key))
    with django_assert_num_queries(1):
        found = latest_slim_records()
    assert sorted(one.key for one in found) == ["h1", "h2", "h3"]


def _site_named_otherwise(record: dict[str, Any]) -> dict[str, Any]:
    record = with_database(record)
    database = record["harvester_db"]
    database["launch_limits"][QUEUE]["siteName"] = "BNL"
    database["workers_now"] = {"BNL": {"running": 3}}
    return record


def _queue_parts_broken(record: dict[str, Any]) -> dict[str, Any]:
    record["fetching"]["queues"][QUEUE] = "not an object"
    record["submission"]["recent_pushes"] = {"not": "a list"}
    record["adjustment"] = {"error": "7", "read": {"bytes": 1}}
    record["harvester_db"] = {"launch_limits": {"error": "gone"}, "workers_now": [],
                              "workers_not_finished_candidates": [
                                  {"workerID": 1, "computingSite": QUEUE,
                                   "diagMessage": "held"}]}
    return record


def _many_reasons(record: dict[str, Any]) -> dict[str, Any]:
    record = with_database(record)
    reasons = record["harvester_db"]["workers_not_finished"][QUEUE]["reasons"]
    template = next(iter(reasons.values()))
    for n in range(12):  # ties in count are ranked by text, in the slice as on the page
        reasons[f"held: reason {n:02d}"] = dict(copy.deepcopy(template), count=n % 4 + 1,
                                               examples=template["examples"] * 3)
    reasons["not an object"] = "odd"
    reasons["no count"] = {"source": "condor_event_log"}
    return record


def _raw_candidates(record: dict[str, Any]) -> dict[str, Any]:
    record = with_database(record)
    database = record["harvester_db"]
    database.pop("workers_not_finished")
    database["workers_not_finished_candidates"] = [
        {"workerID": n, "computingSite": QUEUE if n % 5 else "OTHER", "batchID": f"{n}.0",
         "diagMessage": f"held {n % 8}"} for n in range(40)] + ["not an object"]
    return record


def _odd_database_parts(record: dict[str, Any]) -> dict[str, Any]:
    record = with_database(record)
    database = record["harvester_db"]
    database["workers_not_finished"] = ["not", "an", "object"]
    database["workers_not_finished_candidates"] = [{"workerID": 1, "computingSite": QUEUE}]
    database["workers_ended"] = None
    database["launch_limits"][QUEUE]["siteName"] = 7
    return record


QUEUE_VARIANTS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    **VARIANTS,
    "no jobs": no_jobs,
    "site named otherwise": _site_named_otherwise,
    "queue parts broken": _queue_parts_broken,
    "many reasons": _many_reasons,
    "raw candidates": _raw_candidates,
    "odd database parts": _odd_database_parts,
}


def _whole() -> list[StoredRecord]:
    return [StoredRecord(report.key, report.pk, report.record, report.collected_at,
                         report.received_at)
            for report in HostReport.objects.filter(
                pk__in=LatestReport.objects.values("report_id")).order_by("key")]


@pytest.mark.parametrize("variant", sorted(QUEUE_VARIANTS))
def test_it_shows_the_same_queue_page_from_the_queues_parts(variant: str) -> None:
    now = timezone.now()
    change = QUEUE_VARIANTS[variant]
    store(change(copy.deepcopy(recent(example(), now - dt.timedelta(minutes=2)))))
    store(as_key(change(copy.deepcopy(recent(all_fetches_failing(example()),
                                             now - dt.timedelta(minutes=1)))), "h2"))
    slim = serving(QUEUE)
    assert slim
    whole = [one for one in _whole() if one.key in {found.key for found in slim}]
    assert queue_page(QUEUE, slim, now, 300) == queue_page(QUEUE, whole, now, 300)


@pytest.mark.parametrize("queue", ['quo"te', "sp ace", "error", "<script>", "a/b", "ünï"])
def test_it_slices_any_queue_name(queue: str) -> None:
    now = timezone.now()
    record = recent(with_database(example(), queue), now - dt.timedelta(minutes=1))
    record["fetching"]["queues"][queue] = record["fetching"]["queues"][QUEUE]
    report = HostReport.objects.get(pk=store(record).pk)  # as stored (jsonb orders keys)
    (found,) = serving(queue)
    assert found.record != report.record  # the slice, not the whole record
    page = queue_page(queue, [found], now, 300)
    assert page == queue_page(queue, [StoredRecord(found.key, report.pk, report.record,
                                                   report.collected_at, report.received_at)],
                              now, 300)
    assert page.panels[0].fetching.attempts == 6
    if queue != "error":  # a part's "error" key: the page reads it as the part failing
        assert page.panels[0].db.workers_now.total == 417


def test_it_keeps_only_the_shown_reasons_whole_and_counts_the_others() -> None:
    record = _many_reasons(recent(example(), timezone.now()))
    reasons = sliced(queue_slice(record, QUEUE))["harvester_db"][  # type: ignore[index]
        "workers_not_finished"][QUEUE]["reasons"]
    whole = [name for name, group in reasons.items() if "examples" in group]
    assert len(whole) == REASONS_SHOWN
    assert all(len(reasons[name]["examples"]) <= 3 for name in whole)
    page = queue_page(QUEUE, [StoredRecord("h1", 1, record, timezone.now())], timezone.now(),
                      300)
    nf = page.panels[0].db.not_finished
    assert [reason.count for reason in nf.reasons] == [4, 4, 4, 3, 3]
    # not shown: one 3, four 2s (one the fixture's own), three 1s, two without a count
    assert nf.more_reasons == 10 and nf.more_workers == 3 + 4 * 2 + 3 * 1
    assert nf.more_text == "and 10 more reasons (14 workers)"


def test_it_reads_the_whole_record_where_a_row_has_no_current_slice() -> None:
    now = timezone.now()
    report = store(with_database(recent(example(), now - dt.timedelta(minutes=1))))
    LatestQueue.objects.filter(queue=QUEUE).update(page_slice=None)
    LatestReport.objects.update(summary={"version": SLICE_VERSION + 1, "record": {}})
    (found,) = serving(QUEUE)
    (summary,) = latest_slim_records()
    assert found.record == report.record and summary.record == report.record


def test_it_fills_the_slices_of_existing_rows_when_migrating() -> None:
    migration = importlib.import_module("clusterwatch.monitor.core.migrations.0003_page_slices")
    now = timezone.now()
    report = store(with_database(recent(example(), now - dt.timedelta(minutes=1))))
    store(as_key(recent(example(), now - dt.timedelta(minutes=1)), "h2"))
    LatestQueue.objects.update(page_slice=None)
    LatestReport.objects.update(summary=None)
    migration.fill_slices(apps, None)
    assert LatestReport.objects.get(key=report.key).summary == host_summary(report.record)
    for row in LatestQueue.objects.all():
        latest = LatestReport.objects.get(key=row.key).report
        assert row.page_slice == queue_slice(latest.record, row.queue)
    assert not LatestQueue.objects.filter(page_slice=None).exists()


def test_it_reads_only_the_latest_records_of_the_queue_in_one_query(
    django_assert_num_queries: Any,
) -> None:
    now = timezone.now()
    for minutes in (30, 10, 1):
        store(recent(example(), now - dt.timedelta(minutes=minutes)))
        store(as_key(recent(example(), now - dt.timedelta(minutes=minutes)), "h2"))
    store(recent(example(), now - dt.timedelta(minutes=5)))  # late backlog: not the latest
    with django_assert_num_queries(1):
        found = serving(QUEUE)
    latest = {row.key: row.report_id for row in LatestReport.objects.all()}
    assert {one.key: one.report_id for one in found} == latest
    assert serving("NOT_SERVED") == []
