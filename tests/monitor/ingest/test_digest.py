"""The record digest's canonical JSON: orjson's bytes where they are json.dumps', else
json.dumps' own (see `store.canonical_json`)."""

from __future__ import annotations

import json
import random
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clusterwatch.monitor.ingest.store import canonical_json
from tests.monitor.ingest.support import JSON_VALUES
from tests.monitor.records import example


def reference(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode("ascii")


FLOATS = st.floats(allow_nan=False, allow_infinity=False)
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | FLOATS | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12)


@settings(max_examples=2000, deadline=None)
@given(VALUES)
def test_it_writes_what_json_dumps_writes(value: Any) -> None:
    assert canonical_json({"v": value}) == reference({"v": value})


@settings(max_examples=500, deadline=None)
@given(JSON_VALUES)
def test_it_writes_what_json_dumps_writes_for_the_fuzz_values(value: Any) -> None:
    assert canonical_json({"v": value}) == reference({"v": value})


def test_it_writes_every_float_notation_as_json_dumps() -> None:
    rng = random.Random(23)
    floats = [9.9e15, 9999999999999998.0, 1e16, 1.2345e16, 1e-4, 0.00011, 9.999e-5, 1e22,
              5e-324, -0.0, 0.1, 100.0, 2.5e-7, 1.7976931348623157e308]
    floats += [rng.uniform(-1, 1) * 10 ** rng.randint(-30, 30) for _ in range(20_000)]
    floats += [rng.getrandbits(64) / 2 ** rng.randint(0, 80) for _ in range(20_000)]
    for number in floats:
        assert canonical_json({"v": number}) == reference({"v": number}), number


@pytest.mark.parametrize("value", [
    "é", "\x7f", "\x1f\n\t\b\f\r\"\\/\x00", "\u2028", "\ud800", 2**64, -(2**63) - 1, 2**63,
    {"b": 1, "a": {"d": [1, 2.5], "c": None}}, {"Z": 1, "a": 2, "_": 3}, [], {}, True,
])
def test_it_writes_the_hard_cases_as_json_dumps(value: Any) -> None:
    assert canonical_json({"v": value}) == reference({"v": value})


def test_it_leaves_types_json_dumps_refuses_to_json_dumps() -> None:
    import datetime as dt

    with pytest.raises(TypeError):
        canonical_json({"at": dt.datetime(2026, 12, 4)})


def test_it_takes_orjsons_bytes_for_the_example_record() -> None:
    record = example()
    fast = orjson.dumps(record, option=orjson.OPT_SORT_KEYS)
    assert canonical_json(record) == fast == reference(record)
