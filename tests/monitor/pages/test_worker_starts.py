"""/panda/worker-starts/ through Django's test client: the start cohort beside how the hour's
workers ended, what the page says and what it must not claim, older records, errors."""

from __future__ import annotations

import copy
import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from clusterwatch.monitor.core import registry
from clusterwatch.monitor.panda.remote.run import store as remote_store
from tests.monitor.panda.remote_rows import EPIC, GPU, remote_record
from tests.monitor.panda.remote_rows import KEY as REMOTE_KEY
from tests.monitor.records import QUEUE, as_key, example, recent, store, with_database
from tests.support.admission_section import built_section
from tests.support.page_text import text_of

pytestmark = pytest.mark.django_db
URL = "/panda/worker-starts/"


def admission_section(tmp_path: Path, queue: str = QUEUE) -> dict[str, Any]:
    return built_section(tmp_path, queue)


def full_record(tmp_path: Path) -> dict[str, Any]:
    record = with_database(recent(example(), timezone.now() - dt.timedelta(minutes=1)))
    record["admission"] = admission_section(tmp_path)
    record["harvester_db"]["worker_starts"] = {QUEUE: {"started": 7,
                                                       "by_status": {"running": 5, "failed": 2}}}
    return record


def shown(operator: Client, tmp_path: Path) -> str:
    """The page as read after a full record was stored."""
    store(full_record(tmp_path))
    return text_of(operator.get(URL))


def row_text(response: Any, queue: str = QUEUE) -> str:
    html = response.content.decode()
    start = html.index(f'<tr data-queue="{queue}"')
    return text_of(type("R", (), {"content": html[start:html.index("</tr>", start)].encode()}))


def test_it_sends_anonymous_visitors_to_the_login_page(client: Client) -> None:
    response = client.get(URL)

    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_it_shows_the_cohort_beside_the_hours_ends_and_times(operator: Client,
                                                             tmp_path: Path) -> None:
    store(full_record(tmp_path))

    response = operator.get(URL)

    assert response.status_code == 200
    row = row_text(response)
    # started 7; workers now running 412, submitted 5; 3 refused (exit 73), the SIGTERM stop apart
    assert " 7 in " in row and "now running 5, failed 2" in row
    assert "running 412, submitted 5" in row
    assert "3 1 1 1 0" in row  # refused, cancelled, errors, finished, unclassified
    # recorded wall 3 x 240 s; slot busy and execution only where the event log measured them
    assert "720 s 3 of 3" in row and "240 s 2 of 3" in row and "190 s 2 of 3" in row
    assert "6 with, 0 without" in row


def test_it_groups_refusals_by_slot_and_floor(operator: Client, tmp_path: Path) -> None:
    page = shown(operator, tmp_path)

    assert "slot1_3@wn01.example.edu 7200 s 2 repeated 3400 s" in page
    assert "— (not in the event log) 7200 s 1 3400 s" in page
    assert "counts exit 73 as refusals" in page


def test_it_states_what_the_figures_are_and_are_not(operator: Client, tmp_path: Path) -> None:
    page = shown(operator, tmp_path)

    assert "includes the worker's startup and the harvester's polling and reporting delay" in page
    assert "A started worker is not payload capacity" in page
    assert "they do not diagnose the node" in page
    assert "Software directory" not in page


def test_it_says_not_reported_for_a_record_from_before_telemetry_1_3(operator: Client) -> None:
    record = with_database(recent(example(), timezone.now()))

    store(record)
    row = row_text(operator.get(URL))

    assert row.count("not reported") == 2  # the cohort and the admission section


def test_it_shows_the_sections_error_in_place_of_its_figures(operator: Client,
                                                             tmp_path: Path) -> None:
    record = full_record(tmp_path)
    record["admission"] = {"error": "mysql gave no answer within 30 s"}
    record["harvester_db"]["worker_starts"] = {"error": "ERROR 1146 (42S02) at line 9"}

    store(record)
    row = row_text(operator.get(URL))

    assert "mysql gave no answer within 30 s" in row and "ERROR 1146 (42S02)" in row


def test_it_filters_one_queue_and_escapes_names(operator: Client, tmp_path: Path) -> None:
    hostile = "<script>alert(1)</script>"
    record = full_record(tmp_path)
    other = as_key(copy.deepcopy(record), "harvester02")
    other["admission"] = admission_section(tmp_path / "b", hostile)
    store(record)
    store(other)

    only = operator.get(URL, {"queue": QUEUE}).content.decode()
    every = operator.get(URL).content.decode()

    assert f'data-queue="{QUEUE}"' in only and "harvester02" in only
    assert "&lt;script&gt;" not in only
    assert "<script>alert(1)</script>" not in every and "&lt;script&gt;alert(1)" in every


def test_it_reads_the_page_in_one_query(operator: Client, tmp_path: Path,
                                        django_assert_max_num_queries: Any) -> None:
    for number in range(3):
        store(as_key(full_record(tmp_path), f"harvester{number}"))

    # session, user, the operators-group check, the latest records' parts
    with django_assert_max_num_queries(4):
        response = operator.get(URL)

    assert response.content.decode().count("<tr data-queue=") == 3


def test_it_is_in_the_navigation(operator: Client) -> None:
    assert f'href="{URL}"' in operator.get("/queues/").content.decode()


def test_it_is_linked_from_the_queue_page_for_that_queue(operator: Client,
                                                         tmp_path: Path) -> None:
    store(full_record(tmp_path))

    queue_page = operator.get(f"/queues/{QUEUE}/").content.decode()

    assert f'href="{URL}?queue={QUEUE}"' in queue_page


def started_cell(response: Any, queue: str) -> str:
    html = response.content.decode()
    start = html.index('<td class="num started">', html.index(f'<tr data-queue="{queue}"'))
    cell = html[start:html.index("</td>", start)].encode()
    return text_of(type("R", (), {"content": cell}))


def test_it_shows_the_remote_harvesters_starts_as_a_hosts(operator: Client) -> None:
    """The record built from the PanDA server (Perlmutter) has the reporter's shape."""
    assert remote_store(REMOTE_KEY, remote_record(), 1000) is True
    response = operator.get(URL)
    assert started_cell(response, GPU) == "1 in 300 s now running 1"
    assert started_cell(response, EPIC) == "0 in 300 s"


def test_it_reads_a_remote_record_stored_before_the_shape_was_one(operator: Client) -> None:
    record = remote_record()
    database = record["harvester_db"]
    database["workers_started"] = {site: entry["by_status"]
                                   for site, entry in database.pop("worker_starts").items()}
    assert remote_store(REMOTE_KEY, record, 1000) is True
    assert started_cell(operator.get(URL), GPU) == "1 in 300 s now running 1"


def test_it_names_the_keys_the_harvester_registry_lacks(operator: Client,
                                                        tmp_path: Path) -> None:
    store(full_record(tmp_path))
    store(as_key(full_record(tmp_path), "harvester02"))
    registry.register("harvester02", remote=False)
    text = text_of(operator.get(URL))
    assert "Not in the harvester registry: pandaharvester01 (" in text
    registry.register("pandaharvester01", remote=False)
    assert "Not in the harvester registry" not in text_of(operator.get(URL))
