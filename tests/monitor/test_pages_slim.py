"""Pages read parts of records in the database (`pages.slim`): what they show must be the
same as from whole records."""

from __future__ import annotations

import copy
import datetime as dt
from typing import Any, Callable

import pytest
from django.utils import timezone

from clusterwatch.monitor.models import HostReport, LatestReport
from clusterwatch.monitor.pages.hosts_query import latest_slim_records
from clusterwatch.monitor.pages.hosts_view import host_row
from clusterwatch.monitor.pages.queue_page import queue_page
from clusterwatch.monitor.pages.queue_query import path_safe, serving
from clusterwatch.monitor.pages.stored import StoredRecord

from .pages_support import (
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


QUEUE_VARIANTS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    **VARIANTS,
    "no jobs": no_jobs,
    "site named otherwise": _site_named_otherwise,
    "queue parts broken": _queue_parts_broken,
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
def test_it_reads_whole_records_for_a_queue_name_unsafe_in_a_json_path(queue: str) -> None:
    assert not path_safe(queue)
    now = timezone.now()
    record = recent(example(), now - dt.timedelta(minutes=1))
    record["fetching"]["queues"][queue] = record["fetching"]["queues"][QUEUE]
    store(record)
    (found,) = serving(queue)
    assert found.record == record
    page = queue_page(queue, [found], now, 300)
    assert page.panels[0].fetching.attempts == 6


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
