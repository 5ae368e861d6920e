"""What ingest indexes of a record: the PanDA queues it names and its worker-to-job pushes.

Run on every stored record, so these read the JSON directly, tolerant of any shape.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from clusterwatch.monitor.record.reading import obj
from clusterwatch.monitor.record.sections import DB_QUEUE_PARTS, LOG_SECTIONS
from clusterwatch.monitor.record.times import parse_utc


def queues_in(record: Mapping[str, Any]) -> set[str]:
    """Every PanDA queue the record says something about."""
    names: set[str] = set()
    for section in LOG_SECTIONS:
        names.update(obj(obj(record.get(section)).get("queues")))
    database = obj(record.get("harvester_db"))
    for part in DB_QUEUE_PARTS:
        names.update(name for name, value in obj(database.get(part)).items()
                     if isinstance(value, Mapping))
    for push in pushes_in(record):
        names.add(push["queue"])
    return {name for name in names if isinstance(name, str) and name}


def pushes_in(record: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """The worker-to-PandaID pairs of the record's `submission.recent_pushes`."""
    pushes = obj(record.get("submission")).get("recent_pushes")
    if not isinstance(pushes, list):
        return
    for push in pushes:
        if not isinstance(push, Mapping):
            continue
        at = parse_utc(push.get("at"))
        pandaid, workerid, queue = push.get("pandaid"), push.get("workerid"), push.get("queue")
        if at is None or not isinstance(pandaid, int) or not isinstance(workerid, int):
            continue
        if not isinstance(queue, str):
            continue
        yield {"pandaid": pandaid, "workerid": workerid, "queue": queue, "at": at}
