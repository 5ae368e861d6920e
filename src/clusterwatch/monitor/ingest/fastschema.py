"""A yes/no check compiled from a JSON Schema, for the keywords the record schema uses.

Why: jsonschema interprets the schema for every node it visits (a fresh validator object per
subschema, a registry lookup per `$ref`), about 6 microseconds a node; a 200 KB record has
some 12,000 nodes, so it takes ~70 ms, more than the whole ingest budget. Compiled once into
nested closures, the same check takes a few milliseconds.

This check only answers "valid or not". jsonschema stays the reference: it explains every
rejection (see `validation.py`), and it decides alone when the schema uses any keyword this
compiler does not know (`UnsupportedSchema`), so a later schema can never be checked more
loosely than it says. Semantics follow jsonschema's Draft 2020-12 validator: `1.0` is an
integer, a boolean is neither integer nor number, `pattern` is `re.search`, keywords that
constrain one type ignore the others. tests/monitor/ingest/test_validation.py compares both on
generated records.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

Check = Callable[[Any], bool]

# Keywords that say nothing about validity.
_ANNOTATIONS = frozenset(["$schema", "$comment", "title", "description", "default",
                          "examples", "deprecated", "readOnly", "writeOnly"])
_KNOWN = frozenset(["type", "const", "enum", "required", "properties", "additionalProperties",
                    "items", "anyOf", "allOf", "minimum", "maximum", "minLength", "pattern",
                    "$ref", "$defs", "$id"]) | _ANNOTATIONS


class UnsupportedSchema(ValueError):
    """The schema uses something this compiler does not implement; use jsonschema alone."""


def _is_integer(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


_TYPES: dict[str, Check] = {
    "object": lambda value: isinstance(value, dict),
    "array": lambda value: isinstance(value, list),
    "string": lambda value: isinstance(value, str),
    "integer": _is_integer,
    "number": _is_number,
    "boolean": lambda value: isinstance(value, bool),
    "null": lambda value: value is None,
}


def _same(a: Any, b: Any) -> bool:
    """jsonschema's equality for scalars: 1 == 1.0, but True is not 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a is b
    return bool(a == b)


def compile_schema(schema: Mapping[str, Any]) -> Check:
    """The schema's yes/no check; UnsupportedSchema when it needs jsonschema itself."""
    defs = schema.get("$defs", {})
    if not isinstance(defs, Mapping):
        raise UnsupportedSchema("$defs is not an object")
    compiled: dict[str, Check] = {}
    building: set[str] = set()

    def ref(target: Any) -> Check:
        if not isinstance(target, str) or not target.startswith("#/$defs/"):
            raise UnsupportedSchema(f"$ref {target!r}: only local #/$defs/ references")
        name = target[len("#/$defs/"):]
        if name not in defs or "/" in name or "~" in name:
            raise UnsupportedSchema(f"$ref {target!r} names no definition")
        if name in building:  # a recursive definition: looked up when called
            return lambda value: compiled[name](value)
        if name not in compiled:
            building.add(name)
            compiled[name] = build(defs[name])
            building.discard(name)
        return compiled[name]

    def build(node: Any, top: bool = False) -> Check:
        if node is True or node == {}:
            return lambda value: True
        if node is False:
            return lambda value: False
        if not isinstance(node, Mapping):
            raise UnsupportedSchema(f"a subschema is a {type(node).__name__}")
        unknown = set(node) - _KNOWN
        if unknown:
            raise UnsupportedSchema(f"keywords {sorted(unknown)}")
        if ("$id" in node or "$defs" in node) and not top:
            raise UnsupportedSchema("$id or $defs below the top level")
        return _every([check for check in _parts(node, build, ref) if check is not None])

    for name in defs:
        ref(f"#/$defs/{name}")  # every definition is checked, used or not
    return build(schema, top=True)


def _every(checks: list[Check]) -> Check:
    # Spelled out for the usual one to three checks: a generator per node costs more than
    # the checks themselves.
    if not checks:
        return lambda value: True
    if len(checks) == 1:
        return checks[0]
    if len(checks) == 2:
        first, second = checks
        return lambda value: first(value) and second(value)
    if len(checks) == 3:
        first, second, third = checks
        return lambda value: first(value) and second(value) and third(value)
    return lambda value: all(check(value) for check in checks)


def _parts(node: Mapping[str, Any], build: Callable[[Any], Check],
           ref: Callable[[Any], Check]) -> list[Check | None]:
    return [
        _type(node["type"]) if "type" in node else None,
        _const(node["const"]) if "const" in node else None,
        _enum(node["enum"]) if "enum" in node else None,
        _object(node, build),
        _items(build(node["items"])) if "items" in node else None,
        _any_of([build(sub) for sub in _list(node["anyOf"])]) if "anyOf" in node else None,
        _all_of([build(sub) for sub in _list(node["allOf"])]) if "allOf" in node else None,
        _bound(node.get("minimum"), node.get("maximum")),
        _min_length(node["minLength"]) if "minLength" in node else None,
        _pattern(node["pattern"]) if "pattern" in node else None,
        ref(node["$ref"]) if "$ref" in node else None,
    ]


def _list(value: Any) -> list[Any]:
    if not isinstance(value, list) or not value:
        raise UnsupportedSchema("anyOf/allOf is not a non-empty list")
    return value


def _type(spec: Any) -> Check:
    names = [spec] if isinstance(spec, str) else spec
    if not isinstance(names, list) or not all(name in _TYPES for name in names):
        raise UnsupportedSchema(f"type {spec!r}")
    tests = [_TYPES[name] for name in names]
    if len(tests) == 1:
        return tests[0]
    if len(tests) == 2:
        first, second = tests
        return lambda value: first(value) or second(value)
    return lambda value: any(test(value) for test in tests)


def _scalar(value: Any) -> Any:
    if isinstance(value, (dict, list)):
        raise UnsupportedSchema("const/enum with a structured value")
    return value


def _const(expected: Any) -> Check:
    expected = _scalar(expected)
    return lambda value: _same(value, expected)


def _enum(options: Any) -> Check:
    if not isinstance(options, list):
        raise UnsupportedSchema("enum is not a list")
    choices = [_scalar(option) for option in options]
    return lambda value: any(_same(value, choice) for choice in choices)


def _object(node: Mapping[str, Any], build: Callable[[Any], Check]) -> Check | None:
    if not {"properties", "additionalProperties", "required"} & set(node):
        return None
    properties = {name: build(sub) for name, sub in dict(node.get("properties", {})).items()}
    required = list(node.get("required", []))
    extra = node.get("additionalProperties", True)
    rest: Check | None = None if extra is True or extra == {} else build(extra)

    def check(value: Any) -> bool:
        if not isinstance(value, dict):
            return True
        for name in required:
            if name not in value:
                return False
        for name, item in value.items():
            own = properties.get(name)
            if own is not None:
                if not own(item):
                    return False
            elif rest is not None and not rest(item):
                return False
        return True

    return check


def _items(each: Check) -> Check:
    return lambda value: not isinstance(value, list) or all(each(item) for item in value)


def _any_of(options: list[Check]) -> Check:
    return lambda value: any(option(value) for option in options)


def _all_of(parts: list[Check]) -> Check:
    return lambda value: all(part(value) for part in parts)


def _bound(low: Any, high: Any) -> Check | None:
    if low is None and high is None:
        return None
    if not all(limit is None or _is_number(limit) for limit in (low, high)):
        raise UnsupportedSchema("minimum/maximum is not a number")

    def check(value: Any) -> bool:
        if not _is_number(value):
            return True
        return (low is None or value >= low) and (high is None or value <= high)

    return check


def _min_length(length: Any) -> Check:
    if not _is_integer(length):
        raise UnsupportedSchema("minLength is not an integer")
    return lambda value: not isinstance(value, str) or len(value) >= length


def _pattern(text: Any) -> Check:
    if not isinstance(text, str):
        raise UnsupportedSchema("pattern is not a string")
    search = re.compile(text).search
    return lambda value: not isinstance(value, str) or search(value) is not None
