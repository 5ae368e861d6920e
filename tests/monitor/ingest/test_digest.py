"""The record digest's canonical JSON: orjson's bytes where they are json.dumps', else
json.dumps' own (see `store.canonical_json`)."""

from __future__ import annotations

import hashlib
import json
import random
import struct
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clusterwatch.monitor.ingest.body import parse_body
from clusterwatch.monitor.ingest.errors import Rejection
from clusterwatch.monitor.ingest.store import _may_differ, canonical_json, record_digest
from tests.monitor.ingest.support import JSON_VALUES, odd_float
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


@settings(max_examples=400, deadline=None)
@given(VALUES)
def test_the_digest_of_a_parsed_body_is_json_dumps_whatever_parse_body_says_of_its_floats(
        value: Any) -> None:
    data = reference({"v": value})
    try:
        record, odd = parse_body(data)
    except Rejection as refused:  # a NUL or a lone surrogate: never stored, never digested
        assert refused.error == "unstorable"
        return
    assert odd == odd_float(record) or (odd and b"\\u" in data)  # unsure: True
    assert canonical_json(record, odd) == data
    assert record_digest(record, odd) == hashlib.sha256(data).hexdigest()


def test_orjson_writes_a_float_as_json_dumps_does_from_1e_4_to_1e16_and_zero() -> None:
    """What `odd_floats=False` relies on: no notation to search for in that range."""
    rng = random.Random(29)
    floats = [0.0, -0.0, 1e-4, -1e-4, 1e-4 * (1 + 2**-52), 9999999999999998.0, 0.1, 100.0,
              1e16 * (1 - 2**-53), 123456.789, 2.5e-4]
    floats += [rng.choice((1, -1)) * 10 ** rng.uniform(-4, 16) for _ in range(100_000)]
    floats += [struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]
               for _ in range(100_000)]
    plain = [number for number in floats if number == 0 or 1e-4 <= abs(number) < 1e16]
    assert len(plain) > 100_000
    for number in plain:
        assert orjson.dumps(number) == json.dumps(number).encode(), number
    assert orjson.dumps(9.99e-5) != json.dumps(9.99e-5).encode()  # just below: it differs
    for number in (9.99e-5, 1e16, -1e16, 5e-324, 1.5e300):  # outside: the search finds each
        assert _may_differ(orjson.dumps({"v": number}))


@pytest.mark.parametrize("value", ["\x7f", "é", "1e-05 0.00001 1e+16 7e-3", 2**64, [1, 2],
                                   [0.5, 1e-4, 0.0, -2.5e15]])
def test_without_odd_floats_only_the_strings_are_checked_and_still_as_json_dumps(
        value: Any) -> None:
    assert canonical_json({"v": value}, odd_floats=False) == reference({"v": value})
