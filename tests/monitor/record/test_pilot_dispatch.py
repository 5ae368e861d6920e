"""record.pilot_dispatch: a queue's pilot dispatch reading, typed, from the schema's shape,
from records before telemetry 1.6 and from any JSON at all."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from clusterwatch.monitor.ingest import validation
from clusterwatch.monitor.record.host_record import parse_record
from clusterwatch.monitor.record.pilot_dispatch import (
    PilotDispatch,
    PolicyEvidence,
    pilot_dispatch,
)
from tests.monitor.records import QUEUE, example

SHA = "a" * 64
READING = {"kind": "unrestricted", "images": ["/i1.sif", "/i2.sif"], "template": "/t.sdf",
           "sha256": SHA, "reason": "native per-job dispatch", "bootstrap_images": ["/el9"],
           "policy": {"file": "/p.json", "sha256": SHA, "policy": "epic-osg",
                      "state_file": "/s.json", "state_updated_at": "2026-12-02T01:00:00Z",
                      "state_age_s": 60}}


def with_dispatch(reading: Any) -> dict[str, Any]:
    record = example()
    entry: dict[str, Any] = {"status": "online", "active": True}
    if reading is not None:
        entry["pilot_dispatch"] = reading
    record["queue_status"] = {"source": "/q.json", "queues": {QUEUE: entry}, "dropped": [],
                              "unconfigured": []}
    return record


def test_it_types_every_field_of_a_reading() -> None:
    found = parse_record(with_dispatch(READING)).queue_status
    assert found is not None
    assert found.queues[QUEUE].pilot_dispatch == PilotDispatch(
        kind="unrestricted", images=("/i1.sif", "/i2.sif"), template="/t.sdf", sha256=SHA,
        reason="native per-job dispatch", bootstrap_images=("/el9",),
        policy=PolicyEvidence("/p.json", SHA, "epic-osg", "/s.json",
                              dt.datetime(2026, 12, 2, 1, tzinfo=dt.timezone.utc), 60))


def test_it_reads_none_for_a_queue_from_before_telemetry_1_6() -> None:
    record = with_dispatch(None)
    assert validation.schema_problem(record) is None
    found = parse_record(record).queue_status
    assert found is not None and found.queues[QUEUE].pilot_dispatch is None


def test_it_validates_every_kind_and_refuses_any_other() -> None:
    for kind in ("image_bound", "per_job", "unrestricted", "unknown"):
        assert validation.schema_problem(with_dispatch(dict(READING, kind=kind))) is None
    assert "compatible" in (validation.schema_problem(
        with_dispatch(dict(READING, kind="compatible"))) or "")


@pytest.mark.parametrize(("change", "where"), [
    ({"sha256": "ABC"}, "sha256"), ({"images": "/i.sif"}, "images"),
    ({"template": 3}, "template"),
])
def test_it_refuses_a_reading_of_the_wrong_shape(change: dict[str, Any], where: str) -> None:
    problem = validation.schema_problem(with_dispatch(dict(READING, **change)))
    assert problem is not None and where in problem


def test_it_refuses_a_reading_without_a_required_field() -> None:
    for field in ("kind", "images", "template", "sha256", "reason", "bootstrap_images"):
        reading = {key: value for key, value in READING.items() if key != field}
        assert field in (validation.schema_problem(with_dispatch(reading)) or "")


def test_it_reads_a_kind_it_does_not_know_as_unknown_never_as_compatible() -> None:
    found = pilot_dispatch({"kind": "compatible", "images": ["/i.sif"]})
    assert found is not None and found.kind == "unknown"


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(),
                    lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner)))
def test_it_never_fails_on_any_json(value: Any) -> None:
    found = pilot_dispatch(value)
    assert found is None or found.kind in ("image_bound", "per_job", "unrestricted", "unknown")
