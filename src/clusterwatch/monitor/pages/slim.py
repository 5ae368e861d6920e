"""Reading parts of stored records in the database instead of decoding whole records.

A latest record is up to a few hundred KB, most of it detail a page does not show. Asking
the database for the few JSON paths a page needs (`JSON_EXTRACT` on SQLite, `->` on
PostgreSQL) and putting them back in the record's shape lets the pure view code run
unchanged on the result; tests check that it shows the same as on the whole record.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from django.db.models import BooleanField, ExpressionWrapper, Q
from django.db.models.fields.json import KeyTextTransform, KeyTransform

# (keys from the record's top, kind): "text" for strings, "json" for anything taken whole.
JsonPath = tuple[tuple[str, ...], str]


def _name(index: int) -> str:
    return f"cw_path_{index}"


def _has_name(section: str) -> str:
    return f"cw_has_{section}"


def _expression(column: str, keys: Sequence[str], kind: str) -> Any:
    expression: Any = column
    for key in keys[:-1]:
        expression = KeyTransform(key, expression)
    # Strings as text: a JSON-decoding transform would turn an error text "42" into 42.
    return (KeyTextTransform if kind == "text" else KeyTransform)(keys[-1], expression)


def path_annotations(column: str, paths: Sequence[JsonPath],
                sections: Iterable[str]) -> dict[str, Any]:
    """Query annotations: each path's value, and whether each top-level section exists."""
    found: dict[str, Any] = {_name(index): _expression(column, keys, kind)
                             for index, (keys, kind) in enumerate(paths)}
    for section in sections:
        found[_has_name(section)] = ExpressionWrapper(Q(**{f"{column}__has_key": section}),
                                                      output_field=BooleanField())
    return found


def rebuild(values: Mapping[str, Any], paths: Sequence[JsonPath],
            sections: Iterable[str]) -> dict[str, Any]:
    """The record's shape again, holding only the extracted values that exist."""
    record: dict[str, Any] = {section: {} for section in sections
                              if values.get(_has_name(section))}
    for index, (keys, _) in enumerate(paths):
        value = values.get(_name(index))
        if value is None:
            continue
        target = record
        for key in keys[:-1]:
            nested = target.setdefault(key, {})
            if not isinstance(nested, dict):  # a section that is no object: nothing inside
                break
            target = nested
        else:
            target[keys[-1]] = value
    return record
