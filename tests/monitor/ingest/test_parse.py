"""`body.parse_object`: orjson's fast way answers exactly what the standard library's way
answers (`json.loads`, the only way before), value with its types or refusal with its words,
on generated and hostile bodies."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clusterwatch.monitor.ingest import body
from clusterwatch.monitor.ingest.errors import Rejection
from tests.monitor.ingest.support import odd_float


def _typed(value: Any) -> Any:
    """`value` with every scalar's type beside it (1 == 1.0 == True as plain values)."""
    if isinstance(value, dict):
        return ("dict", [(key, _typed(item)) for key, item in value.items()])
    if isinstance(value, list):
        return ("list", [_typed(item) for item in value])
    return (type(value).__name__, repr(value))


def _answer(data: bytes) -> Any:
    try:
        record, odd = body.parse_body(data)
        assert odd == odd_float(record) or (odd and b"\\u" in data)  # unsure: True
        return ("value", _typed(record))
    except Rejection as refused:
        return ("refused", refused.status, refused.error, refused.detail)


def _standard(data: bytes, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The answer when orjson takes no body: the standard library's way alone."""
    with monkeypatch.context() as patched:
        patched.setattr(body, "_orjson_object", lambda _data: None)
        return _answer(data)


def _depth(value: Any) -> int:
    if isinstance(value, (dict, list)):
        items = value.values() if isinstance(value, dict) else value
        return 1 + max((_depth(item) for item in items), default=0)
    return 0


def _nested(levels: int) -> bytes:
    return b'{"a":' * (levels - 1) + b"{}" + b"}" * (levels - 1)


BIG_INTEGERS = [2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63), -(2**63) - 1, 10**30, -(10**40)]
HOSTILE = [
    b"", b" ", b"{", b'{"a":1', b'{"a":1}x', b"[1,2]", b'"text"', b"null", b"1e400",
    b'{"a":1e400}', b'{"a":-1e400}', b'{"a":NaN}', b'{"a":Infinity}', b'{"a":-Infinity}',
    b'{"a":"\\u0000"}', b'{"\\u0000":1}', b'{"a":"\\ud800"}', b'{"a":"\\udfff\\ud800"}',
    b'{"a":"\\ud83d\\ude00"}', b'{"a":"\xed\xa0\x80"}', b'{"a":"\xff"}', b'\xef\xbb\xbf{}',
    b'{"a":"\x01"}', b'{"a":01}', b'{"a":1.}', b'{"a":.5}', b'{"a":1,}', b"[1,]",
    b'{"a":1,"b":2,"a":3}', b'{"a":-0}', b'{"a":-0.0}', b'{"a":5e-324}', b'{"a":1e-400}',
    b'{"a":9007199254740993}', b'{"a":9007199254740993.0}', b'{"a":1E+2,"b":0.1e1}',
    b'{"a":"\x7f","b":"\\/"}', b'{"a":1}\x00', b" \t\r\n{}\r\n", b"\x0c{}",
    b'{"a":1e19}', b'{"a":-9.3e18,"b":[1.5]}', b'{"a":[' + b"1," * 1000 + b"1]}",
    _nested(64), _nested(65), _nested(1100), b"[" * 5000 + b"]" * 5000,
    b'{"a":' + b"[" * 70 + b"]" * 70 + b"}",
]


@pytest.mark.parametrize("data", HOSTILE)
def test_a_hostile_body_gets_the_standard_librarys_answer(
        data: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _answer(data) == _standard(data, monkeypatch)


@pytest.mark.parametrize("number", BIG_INTEGERS)
def test_an_integer_past_64_bits_stays_an_exact_integer(number: int) -> None:
    # orjson alone would read 2**64 as the float 1.8446744073709552e19.
    data = json.dumps({"n": number, "inner": {"list": [number, 1.5]}}).encode()
    parsed = body.parse_object(data)
    assert parsed["n"] == number and type(parsed["n"]) is int
    assert parsed["inner"]["list"][0] == number and type(parsed["inner"]["list"][0]) is int


@pytest.mark.parametrize(("levels", "allowed"), [(64, True), (65, False), (1100, False)])
def test_the_depth_limit_holds_on_both_ways(levels: int, allowed: bool,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    data = _nested(levels)
    for answer in (_answer(data), _standard(data, monkeypatch)):
        if allowed:
            assert answer[0] == "value"
        else:
            assert answer == ("refused", 400, "json",
                              f"nested deeper than {body.MAX_DEPTH} levels")


def test_the_depth_walk_measures_what_a_recursive_walk_measures() -> None:
    value = {"a": [1, {"b": [[], {"c": None}]}], "d": {}, "e": [[[[[]]]]]}
    assert _depth(value) == 6
    assert body._check_depth(value) == []  # no float
    for levels, allowed in ((body.MAX_DEPTH, True), (body.MAX_DEPTH + 1, False)):
        nested: Any = {}
        for _ in range(levels - 1):
            nested = [nested]
        root = {"x": nested[0]}  # a dict at the top, as the body's
        assert _depth(root) == levels
        if allowed:
            assert body._check_depth(root) == []
        else:
            with pytest.raises(Rejection):
                body._check_depth(root)
    # The floats, at every level (one of 2**63 or more may be orjson's reading of an integer).
    found = body._check_depth({"a": [{"b": 2.0**63, "c": [-0.5, 0.0, 1]}], "d": 1e-7, "e": True})
    assert sorted(found) == [-0.5, 0.0, 1e-7, 2.0**63]


_SCALARS = (st.none() | st.booleans() | st.text(max_size=12)
            | st.integers(min_value=-(2**70), max_value=2**70)
            | st.floats(allow_nan=False, allow_infinity=False)
            | st.sampled_from([2**63, 2**64, -(2**63) - 1, 1e19, -0.0, 5e-324, 1e-7]))
_VALUES = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=4)
                       | st.dictionaries(st.text(max_size=6), inner, max_size=4),
                       max_leaves=24)


@settings(max_examples=300, deadline=None)
@given(value=st.dictionaries(st.text(max_size=6), _VALUES, max_size=6),
       ascii_only=st.booleans(), cut=st.integers(min_value=0, max_value=400),
       noise=st.sampled_from([b"", b"\x00", b"\xff", b"\\", b'"', b"}", b"1e999", b"\xed\xa0"]))
def test_a_generated_body_gets_the_standard_librarys_answer(
        value: dict[str, Any], ascii_only: bool, cut: int, noise: bytes) -> None:
    whole = json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    with pytest.MonkeyPatch.context() as monkeypatch:
        for data in (whole, whole[:cut] + noise + whole[cut:], whole[:cut]):
            assert _answer(data) == _standard(data, monkeypatch)


def test_it_still_refuses_what_no_database_stores() -> None:
    for data, error in ((b'{"a":"x\\u0000"}', "unstorable"), (b'{"a":"\\udc00"}', "unstorable"),
                        (b'{"a":NaN}', "json"), (b"[]", "not_object"), (b"\xff", "encoding")):
        with pytest.raises(Rejection) as raised:
            body.parse_object(data)
        assert (raised.value.status, raised.value.error) == (400, error)
