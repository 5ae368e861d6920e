"""Tolerant readers of the JSON values in a stored record.

Records are validated against the schema on ingest, but reading one must never fail: an
older schema, a hand-inserted row or a reporter bug must show as "—", not as a 500. Each
reader answers None (or an empty value) for anything that is not what the schema says.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

# (name, count) pairs, largest first, then by name: the order every page lists counts in.
Counts = tuple[tuple[str, int], ...]


def obj(value: Any) -> Mapping[str, Any]:
    """`value` when it is a JSON object, else an empty one."""
    # `type(...) is dict` first: a page makes thousands of these checks, and the ABC's
    # isinstance is several times slower for the dicts that JSON decoding gives.
    return value if type(value) is dict or isinstance(value, Mapping) else {}


def is_obj(value: Any) -> bool:
    return type(value) is dict or isinstance(value, Mapping)


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


def boolean(value: Any) -> Optional[bool]:
    return value if isinstance(value, bool) else None


def label(value: Any) -> Optional[str]:
    """An identifier the record may give as a number or as text, as text."""
    return None if value is None else str(value)


def texts(value: Any) -> tuple[str, ...]:
    """The strings of a JSON array (anything else in it left out)."""
    if not isinstance(value, list):
        return ()
    return tuple(item for item in value if isinstance(item, str))


def error_of(value: Any) -> Optional[str]:
    """The `error` a source carries in place of its content (schema: `{"error": "..."}`)."""
    found = obj(value).get("error")
    if found is None:
        return None
    return found if isinstance(found, str) else repr(found)


def counts(value: Any) -> Counts:
    """A `{name: count}` object as (name, count) pairs, largest first, then by name."""
    found = obj(value)
    if not found:
        return ()
    pairs = [(str(name), n) for name, raw in found.items() if (n := integer(raw)) is not None]
    return tuple(sorted(pairs, key=lambda pair: (-pair[1], pair[0])))
