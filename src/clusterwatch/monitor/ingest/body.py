"""From request bytes to one JSON object: size limit, UTF-8, JSON, and what a database refuses.

Every refusal is a `Rejection` (413 or 400) raised before anything is stored. The checks
here cover what the schema cannot say: values that parse as JSON but that PostgreSQL (NUL
characters, lone surrogates, infinities) or a later reader (nesting deep enough to exhaust
the interpreter's recursion) could not handle, so that no body ever turns into a 500.
"""

from __future__ import annotations

import json
import math
import re
from itertools import chain, compress, repeat
from operator import is_
from typing import Any, NamedTuple, Optional

import orjson
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest

from clusterwatch.monitor.ingest.errors import Rejection

# A record is about six levels deep; free-form parts (`against`, harvester_db) add a few.
MAX_DEPTH = 64
_READ_BYTES = 64 * 1024  # per read of an unannounced (chunked) body
_DIGITS = re.compile(r"[0-9]+")
# Only an escape can put a NUL or a lone surrogate into a string of strictly decoded UTF-8.
_RISKY_ESCAPE = re.compile(rb"\\u(?:0000|[dD][89a-fA-F])")
# orjson reads an integer outside [-2**63, 2**64) as a float, of at least this magnitude.
_BIG_FLOAT = float(2**63)
# orjson and json.dumps write a float in the same notation from this magnitude (0 too)...
_PLAIN_FROM = 1e-4
# ... up to this one (tests/monitor/ingest/test_digest.py holds it).
_PLAIN_UNTIL = 1e16


def read_body(request: HttpRequest, limit: int) -> bytes:
    """The body, refused with 413 above `limit` bytes whichever limit notices first.

    A body without a Content-Length (`Transfer-Encoding: chunked`) is read from the server's
    input stream up to its end, never more than `limit` + 1 bytes: Django reads nothing of
    such a body (it takes a missing length for zero).
    """
    declared = request.META.get("CONTENT_LENGTH")
    announced = None
    if declared not in (None, ""):
        text = str(declared).strip()
        # Django's own size check would int() it and fail with a 500 on "abc".
        if not _DIGITS.fullmatch(text):
            raise Rejection(400, "content_length", "Content-Length is not a whole number")
        announced = int(text)
        if announced > limit:
            raise _too_big(limit, f"Content-Length says {announced} bytes")
    elif _chunked(request):
        return _nonempty(read_unannounced(request, limit))
    try:
        body: bytes = request.body
    except RequestDataTooBig:
        # DATA_UPLOAD_MAX_MEMORY_SIZE tripped (set below our limit, or a body longer than
        # it claimed on a server that can tell): the same answer as ours.
        raise _too_big(limit, "the body is over the server's upload limit") from None
    except OSError:
        raise Rejection(400, "body", "the request body could not be read") from None
    if len(body) > limit:
        raise _too_big(limit, f"the body has {len(body)} bytes")
    if announced is not None and len(body) < announced:
        # The sender stopped early (or lied): even a parsable part is not what it meant.
        raise Rejection(400, "body", f"the body ended after {len(body)} of the {announced} "
                                     "bytes its Content-Length announced")
    return _nonempty(body)


def _nonempty(body: bytes) -> bytes:
    if not body:
        raise Rejection(400, "json", "the body is empty; send one JSON record")
    return body


def _chunked(request: HttpRequest) -> bool:
    coding = str(request.META.get("HTTP_TRANSFER_ENCODING", ""))
    return "chunked" in coding.lower()


def read_unannounced(request: HttpRequest, limit: int) -> bytes:
    """A body of unannounced length, to its end: 413 past `limit` bytes (reading stops at
    `limit` + 1), 400 if the stream breaks (bad chunk sizes, the client gone).

    Only from a server that ends the input stream with the body (`wsgi.input_terminated`,
    which gunicorn sets: it de-chunks); reading any other server's stream to its end could
    wait for the client's next request, so there a chunked body is 411 Length Required.
    """
    if not request.META.get("wsgi.input_terminated"):
        raise Rejection(411, "length_required", "this server cannot read a chunked body; "
                                                "send it with a Content-Length")
    stream = request.META["wsgi.input"]
    parts: list[bytes] = []
    size = 0
    while size <= limit:
        try:
            part = stream.read(min(_READ_BYTES, limit + 1 - size))
        except Exception:  # the server's own parse errors (a bad chunk size) are not OSError
            raise Rejection(400, "body", "the chunked request body could not be read") from None
        if not part:
            return b"".join(parts)
        parts.append(part)
        size += len(part)
    raise _too_big(limit, f"the chunked body has more than {limit} bytes")


def _too_big(limit: int, what: str) -> Rejection:
    return Rejection(413, "too_large", f"{what}; the limit is {limit} bytes")


class Parsed(NamedTuple):
    record: dict[str, Any]
    # Whether a float that orjson and json.dumps write in other notations (below 1e-4, from
    # 1e16 on) may be among the values; False: surely none.
    odd_floats: bool


def parse_object(body: bytes) -> dict[str, Any]:
    """The body as a JSON object, or a 400 saying why not (see `parse_body`)."""
    return parse_body(body).record


def parse_body(body: bytes) -> Parsed:
    """The body as a JSON object, or a 400 saying why not; and whether it may hold a float
    of an odd notation (`store.canonical_json` skips its search for them when it holds none).

    orjson parses it (0.35 against 0.7 ms for 200 KB) when the result is sure to be the
    standard library's: no escape that may hold a NUL or a lone surrogate, an object, and no
    float of 2**63 or more (orjson's reading of an integer past 64 bits; the depth walk
    finds one for free). Anything else, and every body orjson refuses, is parsed again by
    `json.loads`, whose value or refusal (and its words) is the answer, as before.
    tests/monitor/ingest/test_parse.py compares both ways on generated and hostile bodies.
    """
    strings = _RISKY_ESCAPE.search(body) is not None
    if not strings:
        fast = _orjson_object(body)
        if fast is not None:
            floats = _check_depth(fast)
            if not any(abs(number) >= _BIG_FLOAT for number in floats):
                return Parsed(fast, _odd(floats))
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Rejection(400, "encoding", f"the body is not UTF-8 (byte {exc.start})") from None
    try:
        value = json.loads(text, parse_constant=_no_constant, parse_float=_finite)
    except RecursionError:
        raise Rejection(400, "json", f"nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:
        raise Rejection(400, "json", f"not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise Rejection(400, "not_object", f"the body is a JSON {_kind(value)}, not an object")
    if strings:
        _check_nodes(value)
        return Parsed(value, True)
    return Parsed(value, _odd(_check_depth(value)))


def _odd(floats: list[float]) -> bool:
    return not all(_PLAIN_FROM <= abs(number) < _PLAIN_UNTIL or number == 0
                   for number in floats)


def _orjson_object(body: bytes) -> Optional[dict[str, Any]]:
    """orjson's object of `body`; None for anything else (refused, not an object)."""
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    return value if type(value) is dict else None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"{text[:40]} is too large for a JSON number")
    return number


def _kind(value: Any) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    return "number"


def _check_depth(root: dict[str, Any]) -> list[float]:
    """No container deeper than MAX_DEPTH (the root is level 1), level by level; the floats
    among the values (a record has a few).

    One level's values are gathered, typed and sorted into dicts and lists by C iterators
    (chain, map, compress): no bytecode runs per value, 15% less than comprehensions
    and half the time of a node-by-node walk on a 200 KB record (whose ~1,400 containers
    are nearly all in harvester_db's free-form parts, so a walk guided by the schema would
    save little). The exact type tests hold because json.loads and orjson make plain dicts
    and lists only.
    """
    dicts: list[Any] = [root]
    lists: list[Any] = []
    depth = 1
    floats: list[float] = []
    while True:
        values = list(chain(chain.from_iterable(map(dict.values, dicts)),
                            chain.from_iterable(lists)))
        kinds = list(map(type, values))
        if float in kinds:
            floats.extend(compress(values, map(is_, kinds, repeat(float))))
        dicts = list(compress(values, map(is_, kinds, repeat(dict))))
        lists = list(compress(values, map(is_, kinds, repeat(list))))
        if not dicts and not lists:
            return floats
        depth += 1
        if depth > MAX_DEPTH:
            raise Rejection(400, "json", f"nested deeper than {MAX_DEPTH} levels")


def _check_nodes(root: dict[str, Any]) -> None:
    """Depth and every string, node by node: for bodies holding a risky escape only."""
    stack: list[tuple[Any, int]] = [(root, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise Rejection(400, "json", f"nested deeper than {MAX_DEPTH} levels")
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for name, item in items:
            if isinstance(name, str):
                _check_string(name)
            if isinstance(item, (dict, list)):
                stack.append((item, depth + 1))
            elif isinstance(item, str):
                _check_string(item)


def _check_string(text: str) -> None:
    if "\x00" in text:
        raise Rejection(400, "unstorable", "a string holds a NUL character (\\u0000)")
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise Rejection(400, "unstorable",
                            "a string holds a lone UTF-16 surrogate (\\ud800-\\udfff)") from None

