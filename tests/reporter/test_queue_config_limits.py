"""Worker limits sanitised as the harvester does, and the limit in force with its derivation."""

from __future__ import annotations

import json
from typing import Any, Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clusterwatch.reporter.queue_config import QueueConfigError, parse_queue_config
from clusterwatch.reporter.queue_limits import (
    LIMITS,
    SanitisedLimits,
    limit_in_force,
    sanitise_limits,
)


def push(**settings: Any) -> SanitisedLimits:
    return sanitise_limits(settings, False, "OneToOne")


def pull(**settings: Any) -> SanitisedLimits:
    return sanitise_limits(settings, True, "NoJob")


def derivation(limits: SanitisedLimits, running: Optional[int] = None) -> str:
    return limit_in_force(limits, running).derivation


def test_it_clips_the_queue_limit_by_its_maximum() -> None:
    limits = push(nQueueLimitWorker=50, nQueueLimitWorkerMax=40, maxWorkers=100)
    assert limits.values["nQueueLimitWorker"] == limits.values["nQueueLimitWorkerMax"] == 40
    assert derivation(limits) == "nQueueLimitWorker 50, clipped by nQueueLimitWorkerMax 40 -> 40"


def test_it_clips_the_queue_limit_by_max_workers() -> None:
    limits = push(nQueueLimitWorker=50, nQueueLimitWorkerMax=40, maxWorkers=30)
    assert limits.values["nQueueLimitWorker"] == limits.values["nQueueLimitWorkerMax"] == 30
    assert derivation(limits) == ("nQueueLimitWorker 50, clipped by nQueueLimitWorkerMax 40, "
                                  "clipped by maxWorkers 30 -> 30")


def test_it_lowers_the_maximum_to_the_queue_limit_when_both_are_set() -> None:
    limits = push(nQueueLimitWorker=20, nQueueLimitWorkerMax=40, maxWorkers=100)
    assert limits.values["nQueueLimitWorkerMax"] == 20
    assert derivation(limits) == "nQueueLimitWorker 20 -> 20"


def test_it_takes_the_maximum_as_the_queue_limit_when_only_it_is_set() -> None:
    limits = push(nQueueLimitWorkerMax=40, maxWorkers=30)
    assert limits.values["nQueueLimitWorker"] == limits.values["nQueueLimitWorkerMax"] == 30
    assert derivation(limits) == ("nQueueLimitWorkerMax 40 (no nQueueLimitWorker), "
                                  "clipped by maxWorkers 30 -> 30")


def test_it_uses_max_workers_when_no_queue_limit_is_set() -> None:
    limits = push(maxWorkers=30)
    assert limits.values["nQueueLimitWorker"] is None
    assert limit_in_force(limits, None).value == 30
    assert derivation(limits) == "no nQueueLimitWorker: maxWorkers 30 -> 30"


def test_it_clips_the_queue_limit_to_zero_when_max_workers_is_unset_as_harvester_does() -> None:
    limits = push(nQueueLimitWorker=50)
    assert limits.values["maxWorkers"] == 0 and limits.values["nQueueLimitWorker"] == 0
    assert derivation(limits) == (
        "nQueueLimitWorker 50, clipped by maxWorkers 0 (the default) -> 0 "
        "(0: the adjuster's queued-worker check applies only above 0)")


def test_it_clips_the_minimum_by_the_queue_limit_only_when_there_is_one() -> None:
    assert pull(nQueueLimitWorker=50, nQueueLimitWorkerMin=80,
                maxWorkers=60).values["nQueueLimitWorkerMin"] == 50
    assert pull(nQueueLimitWorkerMin=80, maxWorkers=60).values["nQueueLimitWorkerMin"] == 80


def test_it_ignores_the_ratio_and_minimum_of_a_push_queue() -> None:
    limits = push(nQueueLimitWorker=30, maxWorkers=50, nQueueLimitWorkerRatio=50,
                  nQueueLimitWorkerMin="x")
    assert limits.values["nQueueLimitWorkerRatio"] is None
    assert limits.values["nQueueLimitWorkerMin"] is None
    assert limits.notes == (
        "nQueueLimitWorkerRatio 50 not used: the worker ratio and minimum apply only to NoJob "
        "(pull) queues, this one is OneToOne",
        'nQueueLimitWorkerMin "x" not used: the worker ratio and minimum apply only to NoJob '
        "(pull) queues, this one is OneToOne")  # cleared before its type is checked
    assert limit_in_force(limits, 1000).value == 30
    assert derivation(limits, 1000) == ("nQueueLimitWorker 30 -> 30; "
                                        "nQueueLimitWorkerRatio 50 not applied: OneToOne queue")


def test_it_ignores_the_job_limits_of_a_pull_queue() -> None:
    limits = pull(maxWorkers=5, nQueueLimitJob=10, nQueueLimitJobCoresMin=2)
    assert all(limits.values[name] is None for name in LIMITS if "Job" in name)
    assert limits.notes == (
        "nQueueLimitJob 10 not used: a NoJob (pull) queue has no job limits",
        "nQueueLimitJobCoresMin 2 not used: a NoJob (pull) queue has no job limits")


def test_it_clips_the_job_limits_of_a_push_queue() -> None:
    limits = push(nQueueLimitJob=30, nQueueLimitJobMax=20, nQueueLimitJobMin=25,
                  nQueueLimitJobCores=8, nQueueLimitJobCoresMin=16)
    assert [limits.values[name] for name in ("nQueueLimitJob", "nQueueLimitJobMax",
                                             "nQueueLimitJobMin", "nQueueLimitJobCoresMin")] \
        == [20, 20, 20, 8]
    assert push(nQueueLimitJobMax=7).values["nQueueLimitJob"] == 7


def test_it_clips_the_core_and_memory_minimums() -> None:
    limits = pull(nQueueLimitWorkerCores=64, nQueueLimitWorkerCoresMin=128,
                  nQueueLimitWorkerMemory=1000, nQueueLimitWorkerMemoryMin=500)
    assert limits.values["nQueueLimitWorkerCoresMin"] == 64
    assert limits.values["nQueueLimitWorkerMemoryMin"] == 500


@pytest.mark.parametrize(("value", "note"), [
    ("10", 'maxWorkers "10" is not an integer: harvester ignores it'),
    (10.0, "maxWorkers 10.0 is not an integer: harvester ignores it"),
    ([10], "maxWorkers [10] is not an integer: harvester ignores it"),
    ({"n": 10}, 'maxWorkers {"n": 10} is not an integer: harvester ignores it'),
])
def test_it_ignores_a_limit_that_is_not_an_integer(value: Any, note: str) -> None:
    limits = push(maxWorkers=value, nQueueLimitWorker=5)
    assert limits.values["maxWorkers"] == 0 and limits.notes == (note,)


def test_it_takes_a_boolean_as_harvester_does_and_says_so() -> None:
    limits = push(maxWorkers=True, nQueueLimitWorker=False)
    assert (limits.values["maxWorkers"], limits.values["nQueueLimitWorker"]) == (1, 0)
    assert limits.notes == ("maxWorkers true is a boolean: harvester takes it as 1",
                            "nQueueLimitWorker false is a boolean: harvester takes it as 0")


def test_it_raises_a_negative_limit_to_zero() -> None:
    limits = push(maxWorkers=10, nQueueLimitWorker=-5)
    assert limits.values["nQueueLimitWorker"] == 0
    assert limits.notes == ("nQueueLimitWorker -5 is negative: harvester uses 0",)


def test_it_quotes_a_long_value_cut_short() -> None:
    (note,) = push(maxWorkers="x" * 500).notes
    assert note == 'maxWorkers "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx... is not an integer: ' \
                   "harvester ignores it"


def test_it_notes_a_number_too_long_to_quote_without_failing() -> None:
    (note,) = push(maxWorkers=-(10 ** 5000)).notes  # past 3.11's int-to-text digit limit
    assert note == "maxWorkers (a number too long to show) is negative: harvester uses 0"


def test_it_applies_the_ratio_of_the_running_workers() -> None:
    limits = pull(nQueueLimitWorker=100, maxWorkers=200, nQueueLimitWorkerRatio=50,
                  nQueueLimitWorkerMin=10)
    found = limit_in_force(limits, 120)
    assert (found.value, found.at_most, found.running_workers) == (60, 100, 120)
    assert found.derivation == ("nQueueLimitWorker 100 -> 100; nQueueLimitWorkerRatio 50% of 120 "
                                "running = 60 -> min(100, 60) = 60")


def test_it_rounds_the_ratio_down_as_harvester_does() -> None:
    limits = pull(nQueueLimitWorker=100, maxWorkers=200, nQueueLimitWorkerRatio=30)
    assert limit_in_force(limits, 7).value == 2  # int(7 * 30 / 100)


def test_it_applies_the_minimum_when_the_ratio_gives_less() -> None:
    limits = pull(nQueueLimitWorker=100, maxWorkers=200, nQueueLimitWorkerRatio=50,
                  nQueueLimitWorkerMin=10)
    found = limit_in_force(limits, 4)
    assert found.value == 10
    assert found.derivation == ("nQueueLimitWorker 100 -> 100; nQueueLimitWorkerRatio 50% of 4 "
                                "running = 2, below nQueueLimitWorkerMin 10 -> min(100, 10) = 10")


def test_it_applies_the_ratio_when_it_gives_exactly_the_minimum() -> None:
    limits = pull(nQueueLimitWorker=100, maxWorkers=200, nQueueLimitWorkerRatio=50,
                  nQueueLimitWorkerMin=10)
    assert derivation(limits, 20) == ("nQueueLimitWorker 100 -> 100; nQueueLimitWorkerRatio 50% "
                                      "of 20 running = 10 -> min(100, 10) = 10")


def test_it_never_lets_the_minimum_exceed_max_workers_when_no_queue_limit_is_set() -> None:
    limits = pull(maxWorkers=10, nQueueLimitWorkerRatio=50, nQueueLimitWorkerMin=100)
    assert limit_in_force(limits, 0).value == 10


def test_it_gives_only_an_upper_bound_when_the_running_workers_are_not_counted() -> None:
    limits = pull(nQueueLimitWorker=100, maxWorkers=200, nQueueLimitWorkerRatio=50)
    found = limit_in_force(limits, None)
    assert (found.value, found.at_most) == (None, 100)
    assert found.derivation == ("nQueueLimitWorker 100 -> 100; nQueueLimitWorkerRatio 50% of the "
                                "running workers, not counted -> at most 100")


@pytest.mark.parametrize("running", [-1, True])
def test_it_refuses_a_running_count_that_is_not_a_count(running: Any) -> None:
    with pytest.raises(ValueError, match="running_workers must be a count"):
        limit_in_force(pull(maxWorkers=1), running)


def test_it_computes_the_limit_of_a_parsed_queue() -> None:
    plugins = {s: {"name": s, "module": s} for s in (
        "messenger", "monitor", "preparator", "stager", "submitter", "sweeper", "workerMaker")}
    parsed = parse_queue_config({"Q": dict(plugins, mapType="NoJob", maxWorkers=50,
                                           nQueueLimitWorkerRatio=10)})
    assert parsed.queues["Q"].limit_in_force(300).value == 30


# Limit values as a hand-written config might hold them: mostly integers, some of every
# wrong type the JSON decoder can give.
limit_values = st.one_of(
    st.none(), st.integers(min_value=-10, max_value=10_000), st.booleans(),
    st.floats(allow_nan=True), st.text(max_size=3), st.lists(st.integers(), max_size=2))
limit_settings = st.dictionaries(st.sampled_from(LIMITS), limit_values)


@settings(max_examples=400, deadline=None)
@given(limit_settings, st.booleans(), st.none() | st.integers(min_value=0, max_value=100_000))
def test_it_never_lets_the_limit_in_force_exceed_max_workers(
        raw: dict[str, Any], pull_mode: bool, running: Optional[int]) -> None:
    limits = sanitise_limits(raw, pull_mode, "NoJob" if pull_mode else "OneToOne")
    found = limit_in_force(limits, running)
    most = limits.values["maxWorkers"]
    assert most is not None and 0 <= found.at_most <= most
    assert found.value is None or 0 <= found.value <= found.at_most
    given_most = raw.get("maxWorkers")
    if isinstance(given_most, int) and given_most > 0:  # set: the limit never exceeds it
        assert found.at_most <= given_most
    assert (found.value is None) == (running is None and limits.values[
        "nQueueLimitWorkerRatio"] is not None)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=3),
    max_leaves=12)
entry_keys = st.sampled_from((
    *LIMITS, "templateQueueName", "isTemplateQueue", "queueStatus", "mapType", "runMode",
    "nNewWorkers", "submitter", "monitor", "messenger", "preparator", "stager", "sweeper",
    "workerMaker"))
entries = st.one_of(json_values, st.dictionaries(entry_keys, json_values | st.sampled_from(
    ["T_TEMPLATE", "NoJob", "offline", 10]), max_size=12))
documents = st.dictionaries(st.sampled_from(["T_TEMPLATE", "P", "Q", "R", "S"]), entries)


@settings(max_examples=300, deadline=None)
@given(documents, st.integers(min_value=0, max_value=1000))
def test_it_reads_any_json_object_without_raising_and_records_json(
        document: dict[str, Any], running: int) -> None:
    try:
        parsed = parse_queue_config(document)
    except QueueConfigError:  # only for a document that is not an object
        raise AssertionError("an object was refused") from None
    record = parsed.to_record({name: running for name in document})
    assert json.loads(json.dumps(record)) == record
    dropped = {problem.queue for problem in parsed.problems}
    assert set(parsed.queues).isdisjoint(dropped) and set(parsed.queues) <= set(document)
