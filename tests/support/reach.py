"""What a collected test reaches, read from its code and its fixtures' code at collection.

The PostgreSQL pass runs every test that touches the monitor's database, and nothing else;
`scripts/test --quick` runs every test that starts no real service. Neither is a list of
file names: a test is put in a tier by what its function, its fixtures and the functions
they call (in tests/ and the loopback harness, a few calls deep) name. A new test joins the
right tier by itself.
"""

from __future__ import annotations

import collections
import functools
import inspect
import types
from collections.abc import Iterable
from typing import Any

# Modules whose functions are followed: the tests' own helpers and the loopback harness.
# Library code (Django, the product) is not followed: what it does is not a test's choice.
_FOLLOWED = ("tests.", "clusterwatch.loopback")
_DEPTH = 6


def names_reached(functions: Iterable[Any]) -> frozenset[str]:
    """Every global and attribute name the functions' code uses, and the code they call.

    A name bound to a function or class of a followed module is followed: its code's names
    are added, down to a few calls.
    """
    names: frozenset[str] = frozenset()
    for function in functions:
        names |= _reached_from(function)
    return names


@functools.cache
def _reached_from(start: Any, depth: int = _DEPTH) -> frozenset[str]:
    seen_code: set[types.CodeType] = set()
    names: set[str] = set()
    queue: collections.deque[tuple[Any, int]] = collections.deque([(start, 0)])
    while queue:  # breadth first: a name is followed at the shallowest depth it appears
        target, level = queue.popleft()
        for function in _functions_of(target):
            code = getattr(function, "__code__", None)
            if code is None or code in seen_code:
                continue
            seen_code.add(code)
            found = _code_names(code)
            names |= found
            if level >= depth:
                continue
            namespace = getattr(function, "__globals__", {})
            for name in found:
                value = namespace.get(name)
                if value is not None and _followed(value):
                    queue.append((value, level + 1))
                elif inspect.ismodule(value) and value.__name__.startswith(_FOLLOWED):
                    # `module.function(...)`: the attribute's name is among the code's names.
                    for attribute in found:
                        member = getattr(value, attribute, None)
                        if member is not None and _followed(member):
                            queue.append((member, level + 1))
    return frozenset(names)


def _functions_of(target: Any) -> list[Any]:
    target = inspect.unwrap(target) if callable(target) else target
    if inspect.isclass(target):
        members = []
        for value in vars(target).values():
            if isinstance(value, (staticmethod, classmethod)):
                value = value.__func__
            if isinstance(value, property):
                members.extend(f for f in (value.fget, value.fset) if f is not None)
            elif inspect.isfunction(value):
                members.append(inspect.unwrap(value))
        return members
    return [target] if inspect.isfunction(target) else []


def _code_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):  # nested functions, lambdas, comprehensions
            names |= _code_names(constant)
    return names


def _followed(value: Any) -> bool:
    module = getattr(value, "__module__", None) or ""
    return (inspect.isfunction(value) or inspect.isclass(value)) and module.startswith(_FOLLOWED)
