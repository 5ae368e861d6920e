"""Shared by the ingest tests: tokens, posting helpers, rows written, and records changed at
random places (the records themselves: `tests.monitor.records`)."""

from __future__ import annotations

import contextlib
import copy
import datetime as dt
import json
from collections.abc import Iterator
from typing import Any, Optional

from django.test import Client
from hypothesis import strategies as st

from clusterwatch.monitor.core.models import HostReport, JobPush, LatestQueue, LatestReport
from clusterwatch.monitor.ingest import tokens
from tests.monitor.records import KEY

BASE_TIME = dt.datetime(2026, 10, 2, 18, 30, tzinfo=dt.timezone.utc)


def odd_float(value: Any) -> bool:
    """Whether a float that orjson and json.dumps write in other notations (below 1e-4 but
    0, from 1e16 on) is among the JSON `value`'s values, at any depth."""
    if isinstance(value, dict):
        return any(odd_float(item) for item in value.values())
    if isinstance(value, list):
        return any(odd_float(item) for item in value)
    return isinstance(value, float) and value != 0 and not 1e-4 <= abs(value) < 1e16


def at(minutes: int) -> dt.datetime:
    return BASE_TIME + dt.timedelta(minutes=minutes)


def new_token(*keys: str) -> str:
    return tokens.create(list(keys or (KEY,)))[1]


def auth(token: str, scheme: str = "Token") -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"{scheme} {token}"}


def url(key: str = KEY) -> str:
    return f"/api/host-reports/{key}/"


def post(client: Client, token: Optional[str], record: Any, key: str = KEY,
         **extra: Any) -> Any:
    data = record if isinstance(record, (bytes, str)) else json.dumps(record)
    headers = auth(token) if token else {}
    return client.post(url(key), data, content_type="application/json", **headers, **extra)


def counts() -> tuple[int, int, int, int]:
    """Rows of everything ingest writes: (reports, latest, latest queues, pushes)."""
    return (HostReport.objects.count(), LatestReport.objects.count(),
            LatestQueue.objects.count(), JobPush.objects.count())



# --- records changed at random places, for the schema and fuzz tests -----------------------

Path = tuple[Any, ...]
Mutation = tuple[Path, str, Any]

SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12),
    st.sampled_from([-1, 0, 1, 1.0, 2.5, -0.5, 100, 100.5, True, False, "", "x",
                     "2026-10-02T18:27:05Z", "2026-10-02T18:27:05Z\n", "2026-10-02",
                     "a/b", "BNL_PanDA_1", "\x00", "\ud800", 2**64, {}, [], {"error": "x"},
                     {"error": 1}]),
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                 max_size=3),
    max_leaves=6,
)


def paths(value: Any, here: Path = ()) -> Iterator[Path]:
    """Every place in `value`, the root included."""
    yield here
    if isinstance(value, dict):
        for name, item in value.items():
            yield from paths(item, (*here, name))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from paths(item, (*here, index))


def mutations_of(base: dict[str, Any]) -> st.SearchStrategy[list[Mutation]]:
    """One to three changes (replace, delete or add next to) at places of `base`."""
    one = st.tuples(st.sampled_from(list(paths(base))),
                    st.sampled_from(["replace", "delete", "add"]), JSON_VALUES)
    return st.lists(one, min_size=1, max_size=3)


def mutated(base: dict[str, Any], changes: list[Mutation]) -> dict[str, Any]:
    record = copy.deepcopy(base)
    for path, action, value in changes:
        # An earlier change may have removed or replaced the place.
        with contextlib.suppress(KeyError, IndexError, TypeError):
            _apply(record, path, action, value)
    return record


def _apply(record: dict[str, Any], path: Path, action: str, value: Any) -> None:
    if not path:
        return
    parent: Any = record
    for part in path[:-1]:
        parent = parent[part]
    last = path[-1]
    if action == "delete" and isinstance(parent, dict):
        del parent[last]
    elif action == "add" and isinstance(parent, dict):
        parent[f"extra_{last}"] = value
    else:
        parent[last] = value
