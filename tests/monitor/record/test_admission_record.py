"""The typed admission section: what the reporter builds reads back exactly; older records,
errors and hostile values read as absent, never as 0 or a failure."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from clusterwatch.monitor.record.admission import (
    END_CLASSES,
    Admission,
    EndTimes,
    RefusalExample,
    admission,
)
from clusterwatch.monitor.record.host_record import parse_record
from tests.support.admission_section import built_section


def _section(tmp_path: Path) -> dict[str, Any]:
    return built_section(tmp_path, "Q", ((1, "failed", 73, "v23_refusal.log"),
                                         (2, "failed", 73, "grid_refusal.log")))


def test_it_reads_what_the_reporter_builds(tmp_path: Path) -> None:
    found = admission(_section(tmp_path))

    assert found is not None and found.error is None
    queue = found.queues["Q"]
    assert [name for name, _ in queue.classes()] == list(END_CLASSES)
    assert queue.refusal.count == 2 and queue.refusal.exit_codes == (("73", 2),)
    assert queue.refusal.times == EndTimes(480, 2, 120, 1, 95, 1)
    assert [(g.slot_name, g.required_lifetime_s, g.count) for g in queue.refusal.groups] == [
        (None, 7200, 1), ("slot1_3@wn01.example.edu", 7200, 1)]
    assert queue.refusal.groups[1].examples == (
        RefusalExample("1", "wn01.example.edu", "BNL_OSG_1", 3400),)
    assert queue.coverage.with_evidence == 2
    assert dict(queue.coverage.not_available)["slot_name"] == (
        ("grid universe: the gridmanager's execute event names the CE, not a slot", 1),)
    assert found.read.records_read == 2 and found.refusal_exit_codes == (73,)


def test_it_reads_every_field_the_reporter_sends(tmp_path: Path) -> None:
    section = _section(tmp_path)
    queue = section["queues"]["Q"]

    assert set(section) - {"queues"} <= {f.name for f in dataclasses.fields(Admission)}
    group = queue["refusal"]["groups"][0]
    assert set(group) == {f.name for f in dataclasses.fields(type(
        admission(section).queues["Q"].refusal.groups[0]))}  # type: ignore[union-attr]
    assert set(queue["refusal"]["times"]) == {f.name for f in dataclasses.fields(EndTimes)}


def test_it_is_none_in_a_record_from_before_telemetry_1_4() -> None:
    assert parse_record({"host": "h"}).admission is None


@pytest.mark.parametrize(("value", "error"), [
    ({"error": "mysql gave no answer within 30 s"}, "mysql gave no answer within 30 s"),
    ([1, 2], "not a JSON object"),
    ("x", "not a JSON object"),
])
def test_it_keeps_an_error_in_place_of_the_section(value: Any, error: str) -> None:
    found = parse_record({"admission": value}).admission

    assert found is not None and found.error == error and not found.queues


def test_it_reads_hostile_values_as_absent_never_as_zero_times() -> None:
    found = admission({"queues": {"Q": {"refusal": {"count": -3, "times": {
        "slot_busy_s": "120", "execute_s": True}, "groups": [None, {"count": "2",
                                                               "examples": "x"}]}},
                                  "R": "not an object"},
                       "refusal_exit_codes": [73, "x", None], "read": []})

    assert found is not None and set(found.queues) == {"Q"}
    refusal = found.queues["Q"].refusal
    assert refusal.count == 0
    assert refusal.times.slot_busy_s is None and refusal.times.execute_s is None
    assert len(refusal.groups) == 1 and refusal.groups[0].examples == ()
    assert found.refusal_exit_codes == (73,) and found.read.cap is None
