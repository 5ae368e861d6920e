"""build_record when sources fail or say nothing: each failure is its part's error and the
record is still built and valid; a harvester id with no rows; malformed metrics; clocks."""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

import pytest

from clusterwatch.monitor.panda.remote.builder import build_record
from clusterwatch.monitor.panda.remote.metrics import parse_metrics
from clusterwatch.monitor.panda.server_rows import SourceFailed
from tests.monitor.panda.remote_rows import (
    EPIC,
    HARVESTER,
    KEY,
    NOW,
    ago,
    assert_valid,
    instance,
    metrics,
    naive,
    perlmutter_config,
    perlmutter_rows,
    rows,
    worker,
)

FAILED = SourceFailed("OperationalError: canceling statement due to statement timeout")


def build(server: Any = None, config: Any = None, **options: Any) -> dict[str, Any]:
    record = build_record(HARVESTER, KEY, server if server is not None else perlmutter_rows(),
                          config if config is not None else perlmutter_config(), NOW, **options)
    assert_valid(record)
    return record


@pytest.mark.parametrize(("table", "where"), [
    ("instances", ("instance",)),
    ("workers", ("harvester_db", "workers_now")),
    ("dialogs", ("dialogs",)),
    ("metrics", ("harvester_db", "service_metrics")),
    ("worker_stats", ("harvester_db", "launch_limits", EPIC, "new_workers")),
])
def test_a_table_that_failed_is_its_parts_error_and_the_rest_is_built(
        table: str, where: tuple[str, ...]) -> None:
    record = build(dataclasses.replace(perlmutter_rows(), **{table: FAILED}))
    part: Any = record
    for name in where:
        part = part[name]
    prefix = "harvester_" + {"instances": "instances", "worker_stats": "worker_stats"}.get(
        table, table)
    assert part["error"] == f"{prefix}: {FAILED.reason}"
    assert record["queue_status"]["queues"][EPIC]["status"] == "online"


def test_a_queue_configuration_that_failed_leaves_the_server_parts_whole() -> None:
    failed = SourceFailed("IRI API refused the token (HTTP 401 to the view request)")
    record = build(config=failed, queue_config_source="iri:cfs:/x/panda_queueconfig.json")
    assert record["harvester_db"]["launch_limits"] == {"error": f"queue configuration: "
                                                                f"{failed.reason}"}
    assert record["harvester_db"]["queue_config_error"] == failed.reason
    assert record["queue_status"]["error"].startswith("queue configuration: IRI API refused")
    assert record["harvester_db"]["workers_now"][EPIC]["running"] == 12
    assert record["submission"]["queues"][EPIC]["workers_submitted"] == 2
    assert EPIC in record["dialogs"]["kinds"][0]["queues"]  # the sites still name queues


def test_every_source_failing_still_gives_a_valid_record() -> None:
    everything = rows(instances=FAILED, workers=FAILED, dialogs=FAILED, metrics=FAILED,
                      worker_stats=FAILED)
    record = build(everything, SourceFailed("no queue configuration"))
    assert record["instance"]["harvester_id"] == HARVESTER
    assert record["hostname"] == "" and record["submission"]["error"]


def test_it_says_so_when_no_table_has_a_row_for_the_harvester_id() -> None:
    record = build(rows(), queue_config_source="panda_queueconfig.json")
    assert record["instance"] == {
        "harvester_id": HARVESTER,
        "error": f"no harvester_instances row for {HARVESTER!r}: the PanDA server has had no "
                 "heartbeat from it and has no worker, dialog, metrics or worker stats row "
                 "for it either (is the harvester id right?)"}
    assert record["harvester_db"]["workers_now"] == {}
    assert record["harvester_db"]["service_metrics"]["by_host"] == {}
    assert record["dialogs"]["messages"] == 0


def test_it_does_not_doubt_the_id_when_other_tables_have_its_rows() -> None:
    record = build(rows(workers=[worker(1, "running")]))
    assert record["instance"]["error"].endswith("had no heartbeat from it")
    unread = build(rows(workers=FAILED))
    assert "is the harvester id right" not in unread["instance"]["error"]


@pytest.mark.parametrize(("text", "error"), [
    ('{"cpu_pc": 11.2', "not valid JSON: Expecting ',' delimiter at line 1 column 16"),
    ("", "not valid JSON: Expecting value at line 1 column 1"),
    ("[1, 2]", "a JSON array, not an object of metrics"),
    ("null", "null, not an object of metrics"),
    (None, "no metrics (NULL)"),
    ("[" * 100_000 + "]" * 100_000, "not usable JSON"),
    ('{"rss_mib": ' + "9" * 5000 + "}", "not usable JSON"),
])
def test_it_makes_malformed_metrics_an_error_field(text: Any, error: str) -> None:
    assert parse_metrics(text) == {"error": error}
    record = build(rows(metrics=[metrics("login31", ago(minutes=1), text),
                                 metrics("login32", ago(minutes=2), '{"cpu_pc": 1.0}')]))
    assert record["harvester_db"]["service_metrics"]["metrics"] == {"error": error}
    assert record["harvester_db"]["service_metrics"]["by_host"]["login32"]["metrics"] == {
        "cpu_pc": 1.0}


def test_it_reports_a_heartbeat_dated_ahead_of_its_clock_without_a_negative_age() -> None:
    record = build(rows(instances=[instance(lastupdate=naive(NOW + dt.timedelta(seconds=90)))]))
    assert record["instance"]["heartbeat_age_s"] == 0
    assert record["instance"]["heartbeat_ahead_s"] == 90


def test_it_reads_a_heartbeat_row_without_times_or_version() -> None:
    # The server's first-contact insert: no start time, no version, description 'automatic'.
    record = build(rows(instances=[instance(starttime=None, sw_version=None, commit_stamp=None,
                                            lastupdate=None, description="automatic",
                                            hostname="198.51.100.7")]))
    assert record["instance"] == {"harvester_id": HARVESTER, "start": None,
                                  "last_heartbeat": None, "heartbeat_age_s": None,
                                  "version": None, "commit_stamp": None,
                                  "heartbeat_from": "198.51.100.7"}


def test_it_takes_the_interval_it_is_given_and_never_a_negative_one() -> None:
    record = build(since=NOW - dt.timedelta(minutes=20))
    assert record["interval"]["seconds"] == 1200
    assert record["submission"]["queues"][EPIC]["workers_submitted"] == 2
    backwards = build(since=NOW + dt.timedelta(minutes=1))
    assert backwards["interval"]["seconds"] == 0
    assert backwards["submission"]["queues"][EPIC]["workers_submitted"] == 0


def test_a_failure_from_an_exception_is_one_line_with_its_class() -> None:
    failure = SourceFailed.of(TimeoutError("no answer\nwithin   30 s"))
    assert failure.reason == "TimeoutError: no answer within 30 s"
    assert SourceFailed.of(ConnectionResetError()).reason == "ConnectionResetError"


def test_it_takes_the_latest_of_two_heartbeat_rows_and_names_a_metrics_row_without_host() -> None:
    record = build(rows(
        instances=[instance(lastupdate=ago(minutes=2), sw_version="0.7.5"),
                   instance(lastupdate=ago(hours=3), sw_version="0.6.0"),
                   instance(harvester_id="BNL_osg_harvester_1", lastupdate=ago(seconds=1))],
        metrics=[metrics(None, ago(minutes=1), '{"cpu_pc": 2.0}')]))
    assert (record["instance"]["version"], record["instance"]["heartbeat_age_s"]) == ("0.7.5",
                                                                                      120)
    assert list(record["harvester_db"]["service_metrics"]["by_host"]) == ["(null)"]
    assert record["hostname"] == ""  # a login node without a name is no host name
