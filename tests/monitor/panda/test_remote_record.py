"""remote_record.build_record over a Perlmutter-like PanDA server: the whole record, valid
against the schema (jsonschema and ingest's compiled check), read by the monitor's parser."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from typing import Any

import pytest

from clusterwatch.monitor.panda.remote.builder import NO_LOGS, build_record
from clusterwatch.monitor.record.host_record import parse_record
from tests.monitor.panda.remote_rows import (
    DROPPED,
    EPIC,
    GPU,
    HARVESTER,
    KEY,
    NOW,
    PUSH,
    assert_valid,
    naive,
    perlmutter_config,
    perlmutter_rows,
    rows,
)


@pytest.fixture
def record() -> dict[str, Any]:
    return build_record(HARVESTER, KEY, perlmutter_rows(), perlmutter_config(), NOW,
                        queue_config_source="iri:cfs:/global/cfs/cdirs/m3763/panda_queueconfig"
                                            ".json")


def test_it_builds_a_record_the_schema_and_ingest_accept(record: dict[str, Any]) -> None:
    assert_valid(record)
    assert record["host"] == KEY and record["collected_at"] == "2026-10-02T18:30:00Z"
    assert record["interval"] == {"since": "2026-10-02T18:25:00Z", "seconds": 300,
                                  "first_run": False}
    json.dumps(record, allow_nan=False)  # plain JSON, nothing a database would refuse


def test_it_says_what_only_logs_could_say_and_why(record: dict[str, Any]) -> None:
    for section in (record["fetching"], record["adjustment"],
                    record["failed_calls"]["communicator"], record["failed_calls"]["propagator"]):
        assert section["read"] == {"error": NO_LOGS}
        assert section["error"].startswith("remote harvester: no logs readable")
    assert "queues" not in record["fetching"]
    assert "log freshness" in record["daemons"]["error"]
    assert record["processes"]["error"].startswith("remote harvester: its process table")
    assert "service_metrics" in record["health"]["volumes"]["error"]


def test_it_reports_the_heartbeat_and_never_the_heartbeat_address_as_the_host(
        record: dict[str, Any]) -> None:
    assert record["instance"] == {
        "harvester_id": HARVESTER, "start": "2026-09-30T18:30:00Z",
        "last_heartbeat": "2026-10-02T18:26:00Z", "heartbeat_age_s": 240, "version": "0.7.5",
        "commit_stamp": "2026-08-03T10:22:06", "heartbeat_from": ""}
    # The host is the login node the harvester last measured itself on.
    assert record["hostname"] == "login32.chn.perlmutter.nersc.gov"


def test_it_counts_the_workers_from_the_servers_copy(record: dict[str, Any]) -> None:
    database = record["harvester_db"]
    assert database["workers_now"] == {EPIC: {"running": 12, "submitted": 2},
                                       GPU: {"running": 1}}
    assert database["workers_overdue"] == {EPIC: {"running": 1}}
    # The reporter's shape, so /panda/worker-starts/ reads it as a host's (issue 19, item 5).
    assert database["worker_starts"] == {GPU: {"started": 1, "by_status": {"running": 1}}}
    assert "workers_started" not in database
    assert database["workers_not_finished_read"] == {
        "window_s": 86400, "workers": 2, "limit": 2000, "limit_reached": False}
    # 205 stays failed, as the server kept it; only 204 finished.
    assert database["workers_ended"] == {EPIC: {"by_status": {"finished": 1, "failed": 1,
                                                              "missed": 1},
                                                "finished_median_run_s": 3600}}
    submission = record["submission"]["queues"]
    assert (submission[EPIC]["workers_submitted"], submission[EPIC]["submit_failures"]) == (2, 1)
    assert submission[PUSH]["workers_submitted"] == 0 and submission[EPIC]["job_chunks"] is None
    reasons = database["workers_not_finished"][EPIC]["reasons"]
    assert reasons["Payload execution error: returned non-zero 73"]["source"] == "harvester_diag"
    assert reasons["sbatch: error: QOSMaxSubmitJobPerUserLimit"]["count"] == 1


def test_it_gives_each_queue_its_status_and_says_which_were_dropped(
        record: dict[str, Any]) -> None:
    status = record["queue_status"]
    assert status["queues"] == {EPIC: {"status": "online", "active": True},
                                GPU: {"status": "brokeroff", "active": True},
                                PUSH: {"status": "offline", "active": False}}
    assert [(drop["queue"], drop["fatal"]) for drop in status["dropped"]] == [(DROPPED, False)]
    assert "names no template" in status["dropped"][0]["message"]
    assert DROPPED not in record["harvester_db"]["launch_limits"]
    assert status["source"].startswith("iri:cfs:") and status["unconfigured"] == []


def test_it_derives_the_limit_in_force_from_the_merged_configuration(
        record: dict[str, Any]) -> None:
    limits = record["harvester_db"]["launch_limits"]
    epic = limits[EPIC]
    assert (epic["nQueueLimitWorker"], epic["maxWorkers"], epic["nQueueLimitJob"]) == (100, 200,
                                                                                       None)
    assert epic["config"]["limit_in_force"] == {
        "value": 6, "at_most": 100, "running_workers": 12,
        "derivation": "nQueueLimitWorkerMax 100 (no nQueueLimitWorker) -> 100; "
                      "nQueueLimitWorkerRatio 50% of 12 running = 6 -> min(100, 6) = 6"}
    assert epic["config"]["pull_mode"] is True and epic["jobFetchTime"] is None
    assert epic["submitTime"] == "2026-10-02T18:28:00Z"
    push = limits[PUSH]["config"]
    assert push["limits"]["nQueueLimitWorkerRatio"] is None
    assert "not applied: OneToOne queue" in push["limit_in_force"]["derivation"]
    assert limits[GPU]["config"]["limit_in_force"]["value"] == 40


def test_it_never_shows_to_submit_as_the_adjusters_decision(record: dict[str, Any]) -> None:
    epic = record["harvester_db"]["launch_limits"][EPIC]
    assert epic["nNewWorkers"] == 0 and epic["by_type"]["managed/SCORE"]["nNewWorkers"] == 0
    new = epic["new_workers"]
    assert new["to_submit"] == 0 and new["stale"] is False
    assert new["meaning"].startswith("run mode self: to_submit is 0 here")
    assert record["harvester_db"]["launch_limits"][PUSH]["new_workers"]["missing"]


def test_it_keeps_the_latest_metrics_of_each_login_node(record: dict[str, Any]) -> None:
    metrics_part = record["harvester_db"]["service_metrics"]
    assert sorted(metrics_part["by_host"]) == ["login31.chn.perlmutter.nersc.gov",
                                               "login32.chn.perlmutter.nersc.gov"]
    login31 = metrics_part["by_host"]["login31.chn.perlmutter.nersc.gov"]
    assert login31["metrics"]["cpu_pc"] == 11.2 and login31["age_s"] == 300
    assert metrics_part["hostName"] == "login32.chn.perlmutter.nersc.gov"
    assert metrics_part["metrics"] == {"cpu_pc": 7.0}


def test_it_groups_the_dialogs_by_module_and_kind(record: dict[str, Any]) -> None:
    dialogs = record["dialogs"]
    assert dialogs["messages"] == 3 and dialogs["window_s"] == 86400
    assert dialogs["modules"]["submitter"]["count"] == 2
    assert dialogs["modules"]["submitter"]["latest"]["at"] == "2026-10-02T18:29:00Z"
    first = dialogs["kinds"][0]
    assert first["count"] == 2 and first["queues"] == [EPIC]
    assert first["kind"] == (f"submit_workers <site={EPIC}> failed to submit a workerID=# with "
                             "sbatch: error: Batch job submission failed: Job violates "
                             "accounting/QOS policy")
    assert (first["first"], first["latest"]["at"]) == ("2026-10-02T18:28:00Z",
                                                       "2026-10-02T18:29:00Z")


def test_the_monitors_parser_reads_the_remote_sections(record: dict[str, Any]) -> None:
    parsed = parse_record(record)
    assert parsed.missing_sections == ()
    assert parsed.instance is not None and parsed.instance.heartbeat_age_s == 240
    assert parsed.instance.last_heartbeat == dt.datetime(2026, 10, 2, 18, 26,
                                                         tzinfo=dt.timezone.utc)
    assert parsed.queue_status is not None
    assert parsed.queue_status.queues[GPU].status == "brokeroff"
    assert parsed.queue_status.dropped[0].queue == DROPPED
    assert parsed.dialogs is not None and parsed.dialogs.kinds[0].queues == (EPIC,)
    assert parsed.dialogs.modules["monitor"].by_level == (("WARNING", 1),)
    # The reporter's parts read as they do for a reporter's record.
    assert parsed.harvester_db.workers_now.entries[EPIC] == (("running", 12), ("submitted", 2))
    assert parsed.harvester_db.launch_limits.entries[EPIC].nQueueLimitWorker == 100
    assert parsed.submission.queues is not None
    assert parsed.submission.queues[EPIC].submit_failures == 1


def test_a_reporters_record_reads_no_remote_sections() -> None:
    from tests.monitor.records import example

    parsed = parse_record(example())
    assert (parsed.instance, parsed.queue_status, parsed.dialogs) == (None, None, None)


def test_it_refuses_a_clock_without_a_zone() -> None:
    with pytest.raises(ValueError, match="aware"):
        build_record(HARVESTER, KEY, rows(), perlmutter_config(), naive(NOW))


def test_it_builds_the_same_record_from_rows_with_or_without_a_zone() -> None:
    plain_rows = perlmutter_rows()
    east = dt.timezone(dt.timedelta(hours=2))

    def zoned(row: Any) -> Any:
        return {name: value.replace(tzinfo=dt.timezone.utc).astimezone(east)
                if isinstance(value, dt.datetime) else value for name, value in row.items()}

    zoned_rows = dataclasses.replace(plain_rows, **{
        table: [zoned(row) for row in getattr(plain_rows, table)]
        for table in ("instances", "workers", "dialogs", "metrics", "worker_stats")})
    plain = build_record(HARVESTER, KEY, plain_rows, perlmutter_config(), NOW)
    other = build_record(HARVESTER, KEY, zoned_rows, perlmutter_config(),
                         NOW.astimezone(dt.timezone(dt.timedelta(hours=-5))))
    assert other == plain and plain["harvester_db"]["workers_now"]
