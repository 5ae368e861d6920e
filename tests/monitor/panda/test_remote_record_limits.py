"""remote_limits: launch limits and queue statuses from a template-merged queue configuration,
and to_submit from harvester_worker_stats with what it means."""

from __future__ import annotations

from typing import Any, Optional

from clusterwatch.monitor.panda.remote.limits import launch_limits, queue_status
from clusterwatch.monitor.panda.server_rows import SourceFailed
from clusterwatch.reporter.queue_config import MANDATORY_SECTIONS, parse_queue_config
from tests.monitor.panda.remote_rows import (
    EPIC,
    GPU,
    HARVESTER,
    NOW,
    PUSH,
    ago,
    perlmutter_config,
    stats,
)

PLUGINS = {section: {"name": f"Dummy{section}", "module": f"pandaharvester.{section}"}
           for section in MANDATORY_SECTIONS}


def merged(**queues: dict[str, Any]) -> Any:
    """Queues over one pull template (ratio 50 %, minimum 5, maxWorkers 200, limit 100)."""
    template = dict(PLUGINS, mapType="NoJob", maxWorkers=200, nQueueLimitWorker=100,
                    nQueueLimitWorkerRatio=50, nQueueLimitWorkerMin=5)
    return parse_queue_config({"pull_TEMPLATE": template, **{
        name: dict({"templateQueueName": "pull_TEMPLATE"}, **settings)
        for name, settings in queues.items()}})


def limits(config: Any, stats_rows: Any = (), running: Optional[dict[str, int]] = None,
           submitted: Optional[dict[str, str]] = None) -> dict[str, Any]:
    rows = stats_rows if isinstance(stats_rows, SourceFailed) else list(stats_rows)
    return launch_limits(config, HARVESTER, rows, running, submitted or {}, NOW)


def test_it_applies_the_ratio_and_its_minimum_to_the_running_workers() -> None:
    config = merged(Q={"submitter": {"templateFile": "epic.sdf"}})
    many = limits(config, running={"Q": 120})["Q"]["config"]["limit_in_force"]
    few = limits(config, running={"Q": 4})["Q"]["config"]["limit_in_force"]
    none = limits(config, running={})["Q"]["config"]["limit_in_force"]
    assert (many["value"], few["value"], none["value"]) == (60, 5, 5)
    assert "below nQueueLimitWorkerMin 5" in few["derivation"]
    assert none["running_workers"] == 0  # the rows were read: no worker is running


def test_it_shows_no_value_but_the_bound_when_the_workers_were_not_read() -> None:
    entry = limits(merged(Q={}), running=None)["Q"]
    assert entry["config"]["limit_in_force"]["value"] is None
    assert entry["config"]["limit_in_force"]["at_most"] == 100
    assert entry["nQueueLimitWorker"] == 100


def test_it_keeps_the_reporters_launch_limit_fields() -> None:
    entry = limits(perlmutter_config(), submitted={EPIC: "2026-10-02T18:28:00Z"})[EPIC]
    assert set(entry) == {"nQueueLimitWorker", "maxWorkers", "nQueueLimitJob", "nNewWorkers",
                          "siteName", "jobFetchTime", "submitTime", "by_type", "config",
                          "new_workers"}
    assert (entry["siteName"], entry["submitTime"]) == (EPIC, "2026-10-02T18:28:00Z")
    assert entry["config"]["template"] == "nersc.pull_TEMPLATE"
    assert "nQueueLimitJob 20 not used" in entry["config"]["notes"][0]


def test_it_sums_to_submit_over_the_types_and_says_what_it_is_in_each_run_mode() -> None:
    config = merged(Q={"runMode": "slave"}, S={})
    rows = [stats("Q", "to_submit", 3, resourcetype="SCORE"),
            stats("Q", "to_submit", 2, resourcetype="MCORE"),
            stats("Q", "running", 40), stats("S", "to_submit", 0)]
    found = limits(config, rows)
    slave = found["Q"]
    assert slave["nNewWorkers"] == 5
    assert {name: entry["nNewWorkers"] for name, entry in slave["by_type"].items()} == {
        "managed/SCORE": 3, "managed/MCORE": 2}
    assert slave["new_workers"]["meaning"].startswith("run mode slave: to_submit is what the "
                                                      "PanDA server's setNWorkers commands")
    assert "not the worker adjuster's decision" in slave["new_workers"]["meaning"]
    assert found["S"]["new_workers"]["meaning"].startswith("run mode self: to_submit is 0")


def test_it_marks_a_worker_stats_snapshot_older_than_four_hours_stale() -> None:
    found = limits(merged(Q={}, R={}), [
        stats("Q", "to_submit", 0, at=ago(hours=4, seconds=1)),
        stats("R", "to_submit", 0, at=ago(hours=4))])
    assert found["Q"]["new_workers"]["stale"] is True
    assert found["Q"]["new_workers"]["at"] == "2026-10-02T14:29:59Z"
    assert found["R"]["new_workers"]["stale"] is False


def test_it_says_when_a_queue_has_no_worker_stats_or_the_table_was_not_read() -> None:
    config = merged(Q={})
    other = stats("Q", "to_submit", 9)
    other["harvester_id"] = "BNL_osg_harvester_1"
    missing = limits(config, [other])["Q"]
    assert missing["nNewWorkers"] is None and missing["by_type"] == {}
    assert missing["new_workers"]["missing"] == "no harvester_worker_stats row for this queue"
    failed = limits(config, SourceFailed("timeout"))["Q"]
    assert failed["new_workers"] == {"error": "harvester_worker_stats: timeout"}
    assert failed["nQueueLimitWorker"] == 100  # the configuration still gives the limits


def test_it_gives_the_configurations_error_for_limits_and_statuses_alike() -> None:
    failed = SourceFailed("queue configuration x is not JSON: Expecting value at line 1 "
                          "column 1")
    assert limits(failed) == {"error": f"queue configuration: {failed.reason}"}
    assert queue_status(failed, {EPIC}, "x") == {
        "error": f"queue configuration: {failed.reason}", "source": "x"}


def test_it_lists_queues_the_server_knows_but_the_configuration_does_not() -> None:
    status = queue_status(perlmutter_config(), {EPIC, "NERSC_Perlmutter_cric_only"}, None)
    assert status["unconfigured"] == ["NERSC_Perlmutter_cric_only"]
    assert set(status["queues"]) == {EPIC, GPU, PUSH} and "error" not in status


def test_it_says_the_harvester_runs_another_configuration_when_this_one_fails_to_load() -> None:
    config = parse_queue_config({"Q": dict(PLUGINS), "broken": ["not", "an", "object"]})
    status = queue_status(config, set(), None)
    assert "reload fails" in status["error"] and status["dropped"][0]["fatal"] is True
    assert status["queues"] == {"Q": {"status": "online", "active": True}}


def test_it_lower_cases_the_status_and_defaults_it_to_online() -> None:
    config = merged(A={"queueStatus": "OFFLINE"}, B={"queueStatus": None}, C={})
    assert queue_status(config, set(), None)["queues"] == {
        "A": {"status": "offline", "active": False}, "B": {"status": "online", "active": True},
        "C": {"status": "online", "active": True}}
