"""Ingest's JSON columns' text (core/json_text.py): orjson's compact text where it writes
JSON's own values, json.dumps' (compact, ASCII) wherever orjson would differ or refuse;
either way the value json.loads reads back is the one written, types and key order kept."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from typing import Any

import orjson
import pytest
from django.utils.safestring import mark_safe
from hypothesis import given, settings
from hypothesis import strategies as st

from clusterwatch.monitor.core.json_text import CompactJSONEncoder
from clusterwatch.monitor.core.models import HostReport, LatestQueue, LatestReport
from tests.monitor.records import typed


def text(value: Any) -> str:
    """As Django writes a JSONField with this encoder (base operations.adapt_json_value)."""
    return json.dumps(value, cls=CompactJSONEncoder)


scalars = st.one_of(
    st.none(), st.booleans(),
    st.integers(-2**63, 2**64 - 1),  # what orjson writes
    st.integers(),  # past 64 bits too: json.dumps writes those
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(),  # any code point, lone surrogates and controls included
    st.sampled_from(["é", "\x7f", "\x00", "\u2028", "日本", "\ud800", "1e-05", "</script>"]),
)
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=5), st.dictionaries(st.text(max_size=8), inner, max_size=5)),
    max_leaves=30)


@settings(max_examples=500, deadline=None)
@given(values)
def test_any_json_value_reads_back_the_same_types_and_key_order(value: Any) -> None:
    written = text(value)
    assert typed(json.loads(written)) == typed(value)
    try:
        fast = orjson.dumps(value).decode()
    except TypeError:
        assert written == json.dumps(value, separators=(",", ":"))
    else:
        assert written == fast


@pytest.mark.parametrize(("value", "expected"), [
    pytest.param({"b": 1, "a": [1.5, 1e-05, 10**20, None, True]},
                 '{"b":1,"a":[1.5,1e-05,100000000000000000000,null,true]}', id="orjson's text"),
    pytest.param({"q": "é"}, '{"q":"é"}', id="text that is not ASCII, as UTF-8"),
    pytest.param({"n": 2**70}, '{"n":1180591620717411303424}', id="an integer past 64 bits"),
    pytest.param({"s": "\ud800"}, '{"s":"\\ud800"}', id="a lone surrogate, escaped"),
    pytest.param({1: "x"}, '{"1":"x"}', id="a key that is not a string, as json.dumps"),
    pytest.param(mark_safe("<b>"), '"<b>"', id="a subclass of str, as json.dumps"),
])
def test_the_text_is_orjsons_or_else_json_dumps_compact(value: Any, expected: str) -> None:
    assert text(value) == expected


def test_what_json_dumps_refuses_is_still_refused() -> None:
    @dataclasses.dataclass
    class Point:
        x: int

    for value in (dt.datetime(2026, 12, 6, tzinfo=dt.timezone.utc), Point(1), {1, 2}):
        with pytest.raises(TypeError):
            text({"v": value})


def test_what_a_caller_asks_of_json_dumps_is_json_dumps_to_write() -> None:
    value = {"b": [1, 2], "a": 1.5}
    for options in ({"sort_keys": True}, {"indent": 2}, {"allow_nan": False}):
        assert json.dumps(value, cls=CompactJSONEncoder, **options) == json.dumps(
            value, **options)
    assert json.dumps(value, cls=CompactJSONEncoder, sort_keys=True) == '{"a": 1.5, "b": [1, 2]}'
    with pytest.raises(ValueError):
        json.dumps([float("nan")], cls=CompactJSONEncoder, allow_nan=False)


def test_a_non_finite_float_is_written_null_as_the_module_says() -> None:
    """The documented limit: callers store finite values only (ingest refuses the others)."""
    assert text([float("nan"), float("inf")]) == "[null,null]"


def test_ingests_three_json_columns_are_written_by_it() -> None:
    fields = [(HostReport, "record"), (LatestReport, "summary"), (LatestQueue, "page_slice")]
    assert all(model._meta.get_field(name).encoder is CompactJSONEncoder
               for model, name in fields)
