"""The queue page's regulation block (telemetry 1.3) and the record's own interval, through
Django's test client: ratio/min/max, the limit in force with its derivation beside the
adjuster's applied limit, worker starts, the job-demand cache ages; older records render."""

from __future__ import annotations

import copy
import datetime as dt
from typing import Any

import jsonschema
import pytest
from django.test import Client

from clusterwatch.monitor.pages.queue_page import harvester_panel
from clusterwatch.monitor.pages.queue_regulation import regulation_rows
from clusterwatch.monitor.pages.stored import StoredRecord
from clusterwatch.reporter.record import load_schema
from tests.monitor.panda.remote_rows import EPIC, KEY, NOW, remote_record
from tests.monitor.records import QUEUE, example, fresh, store, with_database
from tests.support.page_text import text_of

pytestmark = pytest.mark.django_db
PAGE = f"/queues/{QUEUE}/"
DERIVATION = ("nQueueLimitWorker 50 -> 50; nQueueLimitWorkerRatio 20% of 412 running = 82 "
              "-> min(50, 82) = 50")


def since_1_3(record: dict[str, Any], cache_age_s: int = 240) -> dict[str, Any]:
    """`record` as a reporter since telemetry 1.3 sends it (after `fresh`: its collected_at)."""
    changed = copy.deepcopy(record)
    database = changed["harvester_db"]
    database["launch_limits"][QUEUE].update(
        nQueueLimitWorkerRatio=20, nQueueLimitWorkerMin=5, nQueueLimitWorkerMax=50,
        limit_in_force={"value": 50, "at_most": 50, "running_workers": 412,
                        "derivation": DERIVATION})
    database["worker_starts"] = {QUEUE: {"started": 7, "by_status": {"running": 6,
                                                                     "finished": 1}}}
    collected = dt.datetime.strptime(changed["collected_at"], "%Y-%m-%dT%H:%M:%SZ")
    updated = (collected - dt.timedelta(seconds=cache_age_s)).strftime("%Y-%m-%dT%H:%M:%SZ")
    database["job_demand_cache"] = {
        "job_statistics.json": {"subKey": "", "lastUpdate": updated, "age_s": cache_age_s},
        "job_statistics_new.json": {"subKey": None, "lastUpdate": None, "age_s": None}}
    changed["interval"]["expected_s"] = 60
    return changed


def valid(record: dict[str, Any]) -> dict[str, Any]:
    jsonschema.Draft202012Validator(load_schema()).validate(record)
    return record


def test_it_shows_the_limit_in_force_beside_the_adjusters_applied_limit(
        operator: Client) -> None:
    store(valid(since_1_3(fresh(with_database(example())))))
    page = operator.get(PAGE)
    assert page.status_code == 200
    text = text_of(page)
    assert text.index("Worker adjuster") < text.index(
        "Limit in force, worker starts, job demand") < text.index("Harvester database")
    assert ("nQueueLimitWorkerRatio 20 nQueueLimitWorkerMin 5 nQueueLimitWorkerMax 50 "
            "Limit in force 50 Running workers it used 412 Derived "
            + DERIVATION.replace(">", "&gt;")) in text
    assert "Workers started in the interval 7 (now running 6, finished 1)" in text
    assert "Cache job_statistics.json" in text and "age when collected 4 min" in text
    assert "Cache job_statistics_new.json —; age when collected —" in text
    assert "a reporter before telemetry 1.3" not in text


def test_it_says_an_older_record_does_not_report_them_and_still_validates(
        operator: Client) -> None:
    store(valid(fresh(with_database(example()))))
    text = text_of(operator.get(PAGE))
    assert text.count("not reported (a reporter before telemetry 1.3)") == 3
    assert "Limit in force not reported" in text


def test_it_marks_an_old_cache_and_one_dated_after_collection(operator: Client) -> None:
    record = since_1_3(fresh(with_database(example())), cache_age_s=1800)
    record["harvester_db"]["job_demand_cache"]["job_statistics_new.json"] = {
        "subKey": "", "lastUpdate": record["collected_at"], "age_s": -120}
    store(valid(record))
    html = operator.get(PAGE).content.decode()
    assert '<span class="warn-text">30 min</span>' in html
    assert '<span class="bad-text">dated 2 min after collection</span>' in html


def test_it_shows_why_there_is_no_limit_and_escapes_what_the_record_says(
        operator: Client) -> None:
    record = since_1_3(fresh(with_database(example())))
    database = record["harvester_db"]
    database["launch_limits"][QUEUE]["limit_in_force"] = {
        "error": "queue configuration <b>q.json</b> is not JSON"}
    database["worker_starts"] = {"error": "ERROR 1146 <script>alert(1)</script>"}
    database["job_demand_cache"] = {"<i>key</i>": {"subKey": "", "lastUpdate": None,
                                                   "age_s": None}}
    store(valid(record))
    html = operator.get(PAGE).content.decode()
    assert "queue configuration &lt;b&gt;q.json&lt;/b&gt; is not JSON" in html
    assert "ERROR 1146 &lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "Cache &lt;i&gt;key&lt;/i&gt;" in html
    assert "<script>alert" not in html and "<i>key" not in html


def test_it_says_a_ratio_limit_without_running_workers_is_an_upper_bound(
        operator: Client) -> None:
    record = since_1_3(fresh(with_database(example())))
    record["harvester_db"]["launch_limits"][QUEUE]["limit_in_force"] = {
        "value": None, "at_most": 50, "running_workers": None,
        "derivation": "nQueueLimitWorkerRatio 20% of the running workers, not counted"}
    store(valid(record))
    text = text_of(operator.get(PAGE))
    assert "Limit in force at most 50 (a ratio applies; running workers not counted)" in text
    assert "Running workers it used" not in text


@pytest.mark.parametrize(("expected_s", "stale"), [(60, True), (None, False), (600, False)])
def test_the_pages_call_a_record_stale_by_its_own_interval(
        operator: Client, expected_s: int | None, stale: bool) -> None:
    record = fresh(with_database(example()), minutes_ago=10)  # configured: stale after 15
    if expected_s is not None:
        record["interval"]["expected_s"] = expected_s
    store(valid(record))
    queue = operator.get(PAGE).content.decode()
    hosts = operator.get("/hosts/").content.decode()
    assert ("older than three reporting intervals" in queue) is stale
    assert ('class="stale"' in hosts) is stale


def test_it_says_a_remote_harvesters_regulation_is_in_its_panel_not_unreported() -> None:
    panel = harvester_panel(StoredRecord(KEY, 1, valid(remote_record()), NOW, NOW), EPIC,
                            NOW, 300)
    assert panel.remote is not None and panel.db.regulation.remote
    rows = str(regulation_rows(panel.db.regulation))
    assert "a remote harvester (its record built from the PanDA server)" in rows
    assert rows.count("<tr>") == 1 and "telemetry 1.3" not in rows
