"""The GPU answer read by scanning (vector_scan) gives what decoding it whole gives.

The oracle is the row loop the watch had before the scan, written out below over
`json.loads`. Answers are generated in Prometheus' compact shape with hostile labels and
values, then damaged byte by byte; every one must give the oracle's observation through
`parse_vector` (scan or decode) and through `decode_vector` alone, and the plain ones must
really be scanned.
"""

from __future__ import annotations

import json
import math
from typing import Any, Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clusterwatch.watch.prometheus import GpuObservation, decode_vector, parse_vector
from clusterwatch.watch.vector_scan import scan_vector

FILE = "/var/lib/prometheus/node-exporter/gpu_vram.prom"


def oracle(body: bytes) -> GpuObservation:
    """The observation as the watch made it before issue 23 (errors by kind only)."""
    try:
        answer = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return GpuObservation(error="decode")
    if not isinstance(answer, dict) or answer.get("status") != "success" or answer.get(
            "warnings"):
        return GpuObservation(error="status")
    data = answer.get("data")
    if not isinstance(data, dict) or data.get("resultType") != "vector" or not isinstance(
            data.get("result"), list):
        return GpuObservation(error="shape")
    mtimes: dict[str, float] = {}
    invalid: dict[str, str] = {}
    for row in data["result"]:
        metric = row.get("metric") if isinstance(row, dict) else None
        if not isinstance(metric, dict):
            return GpuObservation(error="row")
        instance = metric.get("instance")
        if not isinstance(instance, str) or not instance:
            return GpuObservation(error="row")
        if instance in mtimes or instance in invalid:
            mtimes.pop(instance, None)
            invalid[instance] = "two rows for one instance"
            continue
        pair = row.get("value")
        value: Optional[float] = None
        if isinstance(pair, list) and len(pair) == 2 and isinstance(pair[1], str):
            try:
                value = float(pair[1])
            except ValueError:
                value = None
        if value is None or not math.isfinite(value):
            invalid[instance] = "the value is not a finite number"
            continue
        mtimes[instance] = value
    return GpuObservation(mtimes=mtimes, invalid=invalid)


def same(observation: GpuObservation, expected: GpuObservation) -> bool:
    """Equal, errors compared by presence (the oracle names their kind only)."""
    if expected.error is not None or observation.error is not None:
        return (observation.error is None) == (expected.error is None)
    return (list(observation.mtimes.items()), observation.invalid) == (
        list(expected.mtimes.items()), expected.invalid)


def compact(answer: Any) -> bytes:
    """As Prometheus writes it: no spaces; its encoder escapes no more than json's here."""
    return json.dumps(answer, separators=(",", ":"), ensure_ascii=False).encode()


def answer(rows: list[Any]) -> dict[str, Any]:
    return {"status": "success", "data": {"resultType": "vector", "result": rows}}


def row(instance: Any, value: Any, t: Any = 1_790_949_600.123, **labels: Any) -> Any:
    metric = {"__name__": "node_textfile_mtime_seconds", "file": FILE, **labels}
    if instance is not None:
        metric["instance"] = instance
    metric["job"] = "node"
    return {"metric": metric, "value": [t, value]}


texts = st.one_of(
    st.sampled_from(["10.0.0.1:9100", "10.0.0.2:9100", "[2001:db8::1]:9100", "", "node"]),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=12),
    st.text(alphabet='ab"\\/\x00\x1f\x7f é:,{}[]', max_size=8),
)
values = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["1790949590.5", "NaN", "+Inf", "-Inf", "1_0", " 7 ", "", "x", "1e999",
                     "0x10", "1790949590"]),
    st.just(1.5), st.none(),  # not strings: the value is invalid
)
times = st.one_of(st.floats(allow_nan=False, allow_infinity=False), st.integers(),
                  st.sampled_from(["1790949600", None, True]))
rows = st.lists(st.builds(row, st.one_of(st.none(), texts), values, times), max_size=12)
# Rows drawn from a few instances with plain values: duplicates, the common case.
plain_rows = st.lists(st.builds(row, st.sampled_from(["a:1", "b:1", "c:1", "d:1"]),
                                st.floats(0, 2e9).map(repr)), max_size=6)


@settings(max_examples=400, deadline=None)
@given(rows)
def test_any_generated_answer_reads_as_the_oracle_reads_it(generated: list[Any]) -> None:
    body = compact(answer(generated))
    expected = oracle(body)
    assert same(parse_vector(body), expected)
    assert same(decode_vector(body), expected)


@settings(max_examples=400, deadline=None)
@given(plain_rows, st.data())
def test_a_damaged_answer_reads_as_the_oracle_reads_it(generated: list[Any],
                                                       data: st.DataObject) -> None:
    body = bytearray(compact(answer(generated)))
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(body)))
        edit = data.draw(st.sampled_from(["delete", "insert", "truncate"]))
        if edit == "delete" and at < len(body):
            del body[at]
        elif edit == "insert":
            body[at:at] = data.draw(st.sampled_from(
                [b",", b"]", b"}", b"{", b'"', b" ", b"\\", b"\n", b"\x00", b"\xff", b"e",
                 b"-", b'"instance":"x",', b',"value":[1,"2"]']))
        else:
            del body[at:]
    damaged = bytes(body)
    assert same(parse_vector(damaged), oracle(damaged))


@settings(max_examples=200, deadline=None)
@given(plain_rows)
def test_the_plain_shape_is_scanned_not_decoded(generated: list[Any]) -> None:
    body = compact(answer(generated))
    assert scan_vector(body) is not None
    assert same(parse_vector(body), oracle(body))


@pytest.mark.parametrize("body", [
    pytest.param(compact(answer([row("a:1", "1")]))[:-1] + b"]}}", id="a doubled bracket"),
    pytest.param(compact(answer([row("a:1", "1")])).replace(b"}]", b"},]"),
                 id="a trailing comma"),
    pytest.param(compact(answer([row("a:1", "1"), row("b:1", "2")])).replace(b"},{", b"}{"),
                 id="rows without a comma"),
    pytest.param(compact(answer([row("a:1", "1")])).replace(b'"job"', b'"instance":"b:1","job"'),
                 id="two instance labels in one row"),
    pytest.param(compact(answer([row("a:1", "1")])) + b"\n", id="a trailing newline"),
    pytest.param(compact({**answer([row("a:1", "1")]), "warnings": ["x"]}), id="warnings"),
    pytest.param(compact(answer([row("", "1")])), id="an empty instance"),
    pytest.param(compact(answer([row("a:1", "1", t="1790949600")])), id="a string time"),
    pytest.param(compact(answer([row("é:1", "1")])), id="a label that is not ASCII"),
    pytest.param(compact(answer([row('a"1', "1")])), id="an escaped quote"),
    pytest.param(compact(answer([row("a:1", "1"), row("a:1", "2")])), id="one instance twice"),
    pytest.param(compact(answer([row("a:1", "NaN")])), id="a value that is not finite"),
    pytest.param(compact(answer([])), id="no rows"),
])
def test_the_shapes_near_the_scanned_one_read_as_the_oracle_reads_them(body: bytes) -> None:
    assert same(parse_vector(body), oracle(body))


def _with_time(text: str) -> bytes:
    """One plain row whose time element is `text`, verbatim."""
    body = compact(answer([row("a:1", "1790949590.5", t=1.5)]))
    assert body.count(b"[1.5,") == 1
    return body.replace(b"[1.5,", b"[" + text.encode() + b",")


INT_DIGITS_LIMIT = 4300  # json.loads refuses a longer integer (sys.get_int_max_str_digits)


@pytest.mark.parametrize("body", [
    # Raw control characters are not JSON inside a string, wherever they are.
    *[pytest.param(compact(answer([row("a:1", "1")])).replace(b"a:1", b"a" + c + b"1"),
                   id=f"a raw {c!r} in the instance") for c in (b"\x00", b"\t", b"\n", b"\x1f")],
    pytest.param(compact(answer([row("a:1", "1")])).replace(b'"node"', b'"no\x01de"'),
                 id="a raw control character in another label"),
    pytest.param(compact(answer([row("a:1", "1")])).replace(b'"1"]', b'"1\x7f"]'),
                 id="DEL in the value (JSON allows it)"),
    # Numbers by JSON's grammar only.
    *[pytest.param(_with_time(text), id=f"time {text!r}") for text in (
        "01790949600.1", "00", "-01", "1.", "1e", "1e+", "1.e5", ".5", "+1", "-", "1_0",
        "0x10", "Infinity", "NaN", "-Infinity", "tru", "null", "true", '"1"', "1 ", "x",
        "1,2", "[1]", "-0", "0.0e-0", "1E+9", "17909496000000000000", "179094960000000000000",
    )],
    # An integer time just within and just beyond the decoder's limit (the scan leaves both
    # to it), and a long one with a fraction (a float: any length decodes).
    pytest.param(_with_time("1" * INT_DIGITS_LIMIT), id="an integer time of 4,300 digits"),
    pytest.param(_with_time("1" * (INT_DIGITS_LIMIT + 1)), id="an integer time of 4,301"),
    pytest.param(_with_time("1" * 5000 + ".5"), id="a 5,000-digit time with a fraction"),
])
def test_bytes_and_numbers_at_the_edge_of_json_read_as_the_oracle_reads_them(
        body: bytes) -> None:
    assert same(parse_vector(body), oracle(body))


def test_the_integer_time_beyond_the_decoders_limit_is_an_error() -> None:
    """The oracle's own premise (on an interpreter without the limit the case is moot)."""
    if not hasattr(__import__("sys"), "get_int_max_str_digits"):
        pytest.skip("this interpreter decodes integers of any length")
    assert parse_vector(_with_time("1" * (INT_DIGITS_LIMIT + 1))).error is not None
    assert parse_vector(_with_time("1" * INT_DIGITS_LIMIT)).error is None


def _many_labels(before: int, after: int, instance: bool = True) -> bytes:
    labels = [f'"a{i:06d}":"v"' for i in range(before)]
    if instance:
        labels.append('"instance":"a:1"')
    labels += [f'"z{i:06d}":"v"' for i in range(after)]
    return (b'{"status":"success","data":{"resultType":"vector","result":[{"metric":{'
            + ",".join(labels).encode() + b'},"value":[1.5,"2"]}]}}')


@pytest.mark.parametrize(("before", "after", "scanned"), [
    (64, 64, True), (65, 0, False), (0, 65, False), (3, 500, False),
])
def test_rows_with_many_labels_are_scanned_up_to_a_bound_then_decoded(
        before: int, after: int, scanned: bool) -> None:
    body = _many_labels(before, after)
    assert (scan_vector(body) is not None) is scanned
    assert same(parse_vector(body), oracle(body))
    assert parse_vector(body).mtimes == {"a:1": 2.0}


def test_a_second_instance_label_beyond_the_bound_is_not_taken_for_another_label() -> None:
    """JSON's last duplicate key wins; the first instance is within the scan's bound, the
    second past it, where only the lookahead stops the scan reading the first."""
    labels = [f'"a{i:03d}":"v"' for i in range(10)] + ['"instance":"first:1"'] + [
        f'"b{i:03d}":"v"' for i in range(60)] + ['"instance":"last:1"'] + [
        f'"c{i:03d}":"v"' for i in range(3)]
    body = (b'{"status":"success","data":{"resultType":"vector","result":[{"metric":{'
            + ",".join(labels).encode() + b'},"value":[1.5,"2"]}]}}')
    assert same(parse_vector(body), oracle(body))
    assert parse_vector(body).mtimes == {"last:1": 2.0}


@pytest.mark.parametrize("instance", [True, False], ids=["with instance", "without"])
def test_a_row_of_many_labels_costs_the_scan_no_more_than_a_few_copies_of_the_body(
        instance: bool) -> None:
    """The regex engine keeps an entry per repetition it may backtrack into: unbounded, a
    4 MB row of 200,000 labels took over ten times its size (a 40 MB one, a gigabyte)."""
    import tracemalloc

    body = _many_labels(100_000, 100_000, instance)
    tracemalloc.start()
    try:
        assert scan_vector(body) is None
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 3 * len(body), (peak, len(body))
