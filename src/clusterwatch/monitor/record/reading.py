"""Defensive access to a stored record.

Records are validated against the schema on ingest, but a page must never fail on one: an
older schema, a hand-inserted row or a reporter bug must show as "—", not as a 500.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional


def obj(value: Any) -> Mapping[str, Any]:
    """`value` when it is a JSON object, else an empty one."""
    # `type(...) is dict` first: a page makes thousands of these checks, and the ABC's
    # isinstance is several times slower for the dicts that JSON decoding gives.
    return value if type(value) is dict or isinstance(value, Mapping) else {}


def integer(value: Any) -> Optional[int]:
    """A JSON integer (never a boolean, which Python counts as one)."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value


def number(value: Any) -> Optional[float]:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def text(value: Any) -> Optional[str]:
    return value if isinstance(value, str) else None


def error_of(value: Any) -> Optional[str]:
    """The `error` a source carries in place of its content (schema: `{"error": "..."}`)."""
    found = obj(value).get("error")
    if found is None:
        return None
    return found if isinstance(found, str) else repr(found)


def counts(value: Any) -> list[tuple[str, int]]:
    """A `{name: count}` object as (name, count) pairs, largest first, then by name."""
    pairs = [(str(name), n) for name, raw in obj(value).items()
             if (n := integer(raw)) is not None]
    return sorted(pairs, key=lambda pair: (-pair[1], pair[0]))
