"""Schema checks: the reporter's own file, jsonschema's reasons, and the compiled fast check."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings

from clusterwatch.monitor.ingest import fastschema, validation
from tests.monitor.ingest.support import JSON_VALUES, mutated, mutations_of
from tests.monitor.records import example, with_queues

BASE = with_queues(example(), 2)
BASE["harvester_db"] = {
    "launch_limits": {"BNL_PanDA_1": {"nQueueLimitWorker": 10}},
    "workers_now": {"BNL_PanDA_1": {"running": 3}}, "error": "partial",
}
MUTATIONS = mutations_of(BASE)
Path = tuple[Any, ...]


def test_it_validates_against_the_file_the_reporter_ships() -> None:
    from importlib import resources

    shipped = resources.files("clusterwatch.reporter").joinpath("record-v1.schema.json")
    assert validation.schema_document() == json.loads(shipped.read_text(encoding="utf-8"))


def test_it_compiles_the_shipped_schema_for_the_fast_path() -> None:
    reference, fast = validation.checkers()
    assert fast is not None, "the record schema needs a keyword fastschema lacks"
    assert fast(BASE) and reference.is_valid(BASE)


def test_it_builds_the_validators_once_per_process() -> None:
    assert validation.checkers() is validation.checkers()


def test_it_accepts_the_reporters_example_record() -> None:
    assert validation.schema_problem(example()) is None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(MUTATIONS)
def test_it_agrees_with_jsonschema_on_mutated_records(
        mutations: list[tuple[Path, str, Any]]) -> None:
    record = mutated(BASE, mutations)
    reference, fast = validation.checkers()
    assert fast is not None
    assert fast(record) == reference.is_valid(record)


@settings(max_examples=200, deadline=None)
@given(JSON_VALUES)
def test_it_agrees_with_jsonschema_on_keyword_semantics(value: Any) -> None:
    schemas = [
        {"type": "integer", "minimum": 0}, {"type": ["integer", "null"], "minimum": 0},
        {"type": "number", "minimum": 0, "maximum": 100}, {"const": 1},
        {"enum": [1, "a", None]}, {"type": "string", "minLength": 1, "pattern": "^[^/]+$"},
        {"type": "array", "items": {"type": "integer"}},
        {"anyOf": [{"type": "null"}, {"type": "object", "required": ["at"]}]},
        {"allOf": [{"type": "object"}, {"required": ["a"]}]},
        {"type": "object", "properties": {"a": {"type": "boolean"}},
         "additionalProperties": False},
        {"additionalProperties": {"type": "integer", "minimum": 0}},
        True, False, {},
    ]
    for schema in schemas:
        expected = jsonschema.Draft202012Validator(schema).is_valid(value)
        top = schema if isinstance(schema, dict) else {"anyOf": [schema]}
        assert fastschema.compile_schema(top)(value) == expected, schema


@pytest.mark.parametrize("schema", [
    {"type": "object", "patternProperties": {"^a": {}}},
    {"type": "string", "format": "date-time"},
    {"$ref": "https://example.invalid/other.json"},
    {"$ref": "#/$defs/missing", "$defs": {}},
    {"properties": {"a": {"$id": "inner"}}},
    {"type": "decimal"},
    {"const": {"a": 1}},
    {"items": [{"type": "integer"}]},
])
def test_it_leaves_unknown_schema_features_to_jsonschema(schema: dict[str, Any]) -> None:
    with pytest.raises(fastschema.UnsupportedSchema):
        fastschema.compile_schema(schema)


def test_it_validates_with_jsonschema_alone_when_the_schema_is_beyond_the_compiler(
        monkeypatch: pytest.MonkeyPatch) -> None:
    schema = {"type": "object", "patternProperties": {"^n": {"type": "integer"}}}
    validation.checkers.cache_clear()
    monkeypatch.setattr(validation, "schema_document", lambda: schema)
    try:
        assert validation.checkers()[1] is None
        assert validation.schema_problem({"n": 1}) is None
        assert validation.schema_problem({"n": "x"}) == "at n: 'x' is not of type 'integer'"
    finally:
        validation.checkers.cache_clear()


def test_it_lets_jsonschema_decide_when_the_checks_disagree(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    reference, _ = validation.checkers()
    monkeypatch.setattr(validation, "checkers", lambda: (reference, lambda record: False))
    assert validation.schema_problem(example()) is None
    assert "jsonschema decides" in caplog.text


@pytest.mark.parametrize(("path", "text"), [
    ((), "the top level"),
    (("fetching", "queues", "Q", "attempts"), "fetching.queues.Q.attempts"),
    (("submission", "recent_pushes", 3, "pandaid"), "submission.recent_pushes[3].pandaid"),
])
def test_it_names_the_place_of_a_problem(path: tuple[Any, ...], text: str) -> None:
    assert validation.where(path) == text


def test_it_picks_the_deepest_reason_inside_alternatives() -> None:
    record = example()
    record["fetching"]["queues"]["BNL_PanDA_1"]["last"]["at"] = "yesterday"
    problem = validation.schema_problem(record)
    assert problem is not None
    assert problem.startswith("at fetching.queues.BNL_PanDA_1.last")


@pytest.mark.parametrize("value", [
    {}, {"next": {}}, {"next": {"next": {"n": 1}}}, {"next": {"next": {"n": "x"}}},
    {"next": 3}, [],
])
def test_it_follows_recursive_definitions_like_jsonschema(value: Any) -> None:
    schema = {"$defs": {"node": {"type": "object", "properties": {
        "next": {"$ref": "#/$defs/node"}, "n": {"type": "integer"}}}},
        "$ref": "#/$defs/node"}
    expected = jsonschema.Draft202012Validator(schema).is_valid(value)
    assert fastschema.compile_schema(schema)(value) == expected
