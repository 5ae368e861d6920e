"""The text of ingest's JSON columns: compact JSON written by orjson.

Django's JSONField writes `json.dumps(value)`: for a 200 KB host record 1.9 ms of CPU, and
0.9 ms more for its queues' slices, a fifth of a post's server CPU (benchmarks/README.md,
issue 23). orjson writes the same value as compact UTF-8 text in a tenth of that. The text
differs (no spaces after separators, text that is not ASCII unescaped, floats in orjson's
notation) but decodes to the same value, keys in the same order, which is all that reads it:
the JSONField's own json.loads, SQLite's JSON functions and PostgreSQL's jsonb. Rows written
before keep json.dumps' text; both kinds decode alike.

Where orjson would write something json.dumps does not (a datetime, a dataclass, a subclass
of str or int, a key that is not a string) or refuses (an integer past 64 bits, a lone
surrogate), json.dumps writes the text, compact as well and escaped to ASCII as before, and
refuses what it refused before. So does a caller that asks json.dumps for sorted keys,
indentation or no NaN (Django's form field sorts keys to compare values). Two kinds orjson
writes and json.dumps refused: UUIDs and enum members (no value decoded from JSON is one).
Values must be finite: orjson writes NaN and infinities as null; ingest's records cannot
hold them (body.parse_object refuses them), and what the slices take of a record is copied,
never computed.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

_OPTIONS = (orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
            | orjson.OPT_PASSTHROUGH_SUBCLASS)


class CompactJSONEncoder(json.JSONEncoder):
    """A JSONField `encoder`: `json.dumps(value, cls=CompactJSONEncoder)`, which Django calls
    for every write of the field (the ORM's, ingest's prepared statements, PostgreSQL's
    Jsonb adapter), returns `encode`'s text."""

    def __init__(self, **options: Any) -> None:
        # What json.dumps was asked for beyond its defaults is json.dumps' to write, as asked.
        self._plain = (not options.get("sort_keys") and options.get("indent") is None
                       and options.get("allow_nan", True))
        if self._plain:
            options["separators"] = (",", ":")
        super().__init__(**options)

    def encode(self, o: Any) -> str:
        if self._plain:
            try:
                return orjson.dumps(o, option=_OPTIONS).decode()
            except TypeError:  # orjson.JSONEncodeError: a big integer, another type
                pass
        return super().encode(o)
