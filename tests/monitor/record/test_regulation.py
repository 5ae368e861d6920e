"""The typed regulation parts (telemetry 1.3) name what the reporter builds, and read records
without them, or with broken ones, as not reported rather than failing."""

from __future__ import annotations

import dataclasses

from clusterwatch.monitor.record import regulation as typed
from clusterwatch.monitor.record.host_record import parse_record
from clusterwatch.reporter.harvester_regulation import (
    add_limits_in_force,
    job_demand_cache,
    worker_starts,
)
from clusterwatch.reporter.queue_config import parse_queue_config
from tests.monitor.records import example, with_database

PLUGINS = {section: {} for section in ("messenger", "monitor", "preparator", "stager",
                                       "submitter", "sweeper", "workerMaker")}


def names(cls: type) -> set[str]:
    return {field.name for field in dataclasses.fields(cls)}


def test_the_types_name_what_the_reporter_builds() -> None:
    config = parse_queue_config({"Q": dict(PLUGINS, mapType="NoJob", nQueueLimitWorkerRatio=5)})
    section = {"launch_limits": {"Q": {"siteName": "Q"}}, "workers_now": {"Q": {"running": 9}}}
    add_limits_in_force(section, config, None)
    assert set(section["launch_limits"]["Q"]["limit_in_force"]) == names(
        typed.LimitInForce) - {"error"}
    started = worker_starts([{"computingSite": "Q", "status": "running", "COUNT(*)": 2}])
    assert set(started["Q"]) == names(typed.WorkerStarts)
    cache = job_demand_cache([])
    assert set(cache["job_statistics.json"]) == names(typed.CacheKey)


def test_it_reads_the_parts_of_a_record_from_a_reporter_since_1_3() -> None:
    record = with_database(example())
    database = record["harvester_db"]
    database["launch_limits"]["BNL_PanDA_1"].update(
        nQueueLimitWorkerRatio=20, nQueueLimitWorkerMin=5, nQueueLimitWorkerMax=50,
        limit_in_force={"value": 50, "at_most": 50, "running_workers": 412,
                        "derivation": "nQueueLimitWorker 50 -> 50; ..."})
    database["worker_starts"] = {"BNL_PanDA_1": {"started": 7, "by_status": {"running": 7}}}
    database["job_demand_cache"] = {"job_statistics.json": {
        "subKey": "", "lastUpdate": "2026-11-29T13:26:48Z", "age_s": 240}}
    record["interval"]["expected_s"] = 60
    parsed = parse_record(record)
    limits = parsed.harvester_db.launch_limits.entries["BNL_PanDA_1"]
    assert (limits.nQueueLimitWorkerRatio, limits.nQueueLimitWorkerMin,
            limits.nQueueLimitWorkerMax) == (20, 5, 50)
    assert limits.limit_in_force == typed.LimitInForce(
        None, 50, 50, 412, "nQueueLimitWorker 50 -> 50; ...")
    assert parsed.harvester_db.worker_starts is not None
    assert parsed.harvester_db.worker_starts.entries["BNL_PanDA_1"] == typed.WorkerStarts(
        7, (("running", 7),))
    assert parsed.harvester_db.job_demand_cache is not None
    cache = parsed.harvester_db.job_demand_cache.entries["job_statistics.json"]
    assert cache.age_s == 240 and cache.lastUpdate is not None
    assert parsed.interval.expected_s == 60 and parsed.interval.every_s(300) == 60


def test_it_reads_an_older_record_as_not_reporting_them() -> None:
    parsed = parse_record(with_database(example()))
    limits = parsed.harvester_db.launch_limits.entries["BNL_PanDA_1"]
    assert limits.limit_in_force is None and limits.nQueueLimitWorkerRatio is None
    assert parsed.harvester_db.worker_starts is None
    assert parsed.harvester_db.job_demand_cache is None
    assert parsed.interval.expected_s is None and parsed.interval.every_s(300) == 300


def test_it_reads_broken_parts_without_failing() -> None:
    record = with_database(example())
    database = record["harvester_db"]
    database["launch_limits"]["BNL_PanDA_1"]["limit_in_force"] = {"value": "12\x00",
                                                                  "derivation": 7}
    database["worker_starts"] = {"error": "ERROR 1146 (42S02) at line 13: no work_table"}
    database["job_demand_cache"] = ["not", "an object"]
    record["interval"]["expected_s"] = -5
    parsed = parse_record(record)
    limits = parsed.harvester_db.launch_limits.entries["BNL_PanDA_1"]
    assert limits.limit_in_force == typed.LimitInForce()
    assert parsed.harvester_db.worker_starts is not None
    assert parsed.harvester_db.worker_starts.error.startswith("ERROR 1146")
    assert parsed.harvester_db.job_demand_cache is not None
    assert dict(parsed.harvester_db.job_demand_cache.entries) == {}
    assert parsed.interval.every_s(300) == 300  # a nonsensical interval is not followed
