"""What the `/panda/worker-starts/` page reads of each harvester's latest record: only the parts
it shows (one query; the JSON key lookups run in the database, so a few-hundred-KB record is
not loaded whole), for the pure builder `worker_starts_page`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.db.models import Exists, OuterRef

from clusterwatch.monitor.core.models import LatestReport, RegisteredHarvester

# (the record's path, the lookup that reads it)
_PARTS = (
    (("collected_at",), "report__record__collected_at"),
    (("interval",), "report__record__interval"),
    (("admission",), "report__record__admission"),
    (("fetching", "queues"), "report__record__fetching__queues"),
    (("harvester_db", "worker_starts"), "report__record__harvester_db__worker_starts"),
    # A remote record built before it had the starts as `workers_started` (record/ reads it).
    (("harvester_db", "workers_started"), "report__record__harvester_db__workers_started"),
    (("harvester_db", "workers_now"), "report__record__harvester_db__workers_now"),
)


def _rebuilt(row: Mapping[str, Any]) -> dict[str, Any]:
    """The record's shape again, holding only the parts read (absent ones left out)."""
    record: dict[str, Any] = {}
    for path, lookup in _PARTS:
        value = row.get(lookup)
        if value is None:
            continue
        node = record
        for name in path[:-1]:
            node = node.setdefault(name, {})
        node[path[-1]] = value
    return record


def latest_parts() -> tuple[list[tuple[str, dict[str, Any]]], frozenset[str]]:
    """Each key's parts, and which keys the harvester registry has (in the same query, as the
    queue page asks it: the page's query count stays one however many harvesters report)."""
    rows: Iterable[Mapping[str, Any]] = LatestReport.objects.annotate(
        registered=Exists(RegisteredHarvester.objects.filter(key=OuterRef("key")))).values(
        "key", "registered", *(lookup for _, lookup in _PARTS))
    found, registered = [], set()
    for row in rows:
        found.append((row["key"], _rebuilt(row)))
        if row["registered"]:
            registered.add(row["key"])
    return found, frozenset(registered)
