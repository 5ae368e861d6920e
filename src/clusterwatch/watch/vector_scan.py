"""Prometheus' instant-vector answer read in its usual shape, without building its objects.

At 50,000 GPU workers the answer is 10 MB of JSON; `json.loads` makes a dict, a list and
five strings of every row (50 MB, 90 ms) only for the poll to keep one label and the value.
Prometheus writes the answer compactly and always alike:

    {"status":"success","data":{"resultType":"vector","result":[ROW,ROW,...]}}
    ROW = {"metric":{"__name__":"...","instance":"...",...},"value":[1700000000.123,"VALUE"]}

`scan_vector` reads exactly that shape, with strings free of escapes and control
characters, and gives None for anything else (whitespace, another key order, warnings,
escaped or non-ASCII text, a row without an instance label or with more than 64 labels on
either side of it, an integer time of more than 20 digits, bytes that are not JSON):
prometheus.parse_vector then decodes the answer whole. A body is read here only if it is
JSON that the decoder reads to the same rows, so both paths give the same observation
(tests/watch/test_vector_scan.py holds them equal on generated and damaged answers).
"""

from __future__ import annotations

import re
from operator import itemgetter
from typing import Optional

PREFIX = b'{"status":"success","data":{"resultType":"vector","result":['
SUFFIX = b"]}}"
# Bytes that may not appear: control characters (invalid raw in JSON strings), the escape
# character, and everything outside ASCII (left to the decoder's UTF-8 rules).
_NOT_PLAIN = bytes(range(0x20)) + b"\\" + bytes(range(0x80, 0x100))
_TEXT = '[^"]*'  # a string's content once escapes and control characters are excluded
_OTHER_KEY = '"(?!instance")' + _TEXT + '"'  # a second `instance` key would be a duplicate
# JSON's number grammar, the integer part bounded: json.loads refuses an integer of more
# than 4,300 digits (sys.get_int_max_str_digits), and a time has 10.
_NUMBER = r"-?(?:0|[1-9][0-9]{0,19})(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"
# Labels a row may have on either side of its instance to be scanned (Prometheus' rows here
# have a handful). The bound is what keeps the scan's memory small: the regex engine keeps
# a backtracking entry per repetition of a group, tens of bytes per byte of a row with
# thousands of labels; a row with more goes to the decoder.
_LABELS_EACH_SIDE = 64
# One row and the comma after it (or the end): (whole row, instance, value).
_ROW = re.compile(
    r'(\{"metric":\{'
    rf'(?:{_OTHER_KEY}:"{_TEXT}",){{0,{_LABELS_EACH_SIDE}}}"instance":"({_TEXT})"'
    rf'(?:,{_OTHER_KEY}:"{_TEXT}"){{0,{_LABELS_EACH_SIDE}}}'
    rf'\}},"value":\[{_NUMBER},"({_TEXT})"\]\}}(?:,|\Z))'
)
_whole, _instance, _value = itemgetter(0), itemgetter(1), itemgetter(2)


def scan_vector(body: bytes) -> Optional[list[tuple[str, str]]]:
    """(instance, value text) of every row in answer order, or None: decode it whole.

    None also for a row whose instance label is empty, which the decoder turns into the
    answer's error.
    """
    if not (body.startswith(PREFIX) and body.endswith(SUFFIX)):
        return None
    if len(body.translate(None, _NOT_PLAIN)) != len(body):
        return None
    inner = body[len(PREFIX):len(body) - len(SUFFIX)].decode("ascii")
    if not inner:
        return []
    rows = _ROW.findall(inner)
    # findall's matches never overlap and come in order: lengths that add up to the whole
    # mean the rows follow each other with nothing between them. The last one must not
    # have taken a comma (`[ROW,]` is not JSON).
    if sum(map(len, map(_whole, rows))) != len(inner) or inner.endswith(","):
        return None
    instances = list(map(_instance, rows))
    if "" in instances:
        return None
    return list(zip(instances, map(_value, rows)))
