"""The harvester registry: the keys the monitor expects a record from, read by every reader
(hosts page, queue pages, alarms, `list_harvesters --remote` for the remote builder's timer).

Managed in the admin (RegisteredHarvester) and with `clusterwatch monitor register_harvester
KEY [--remote] [--note TEXT]`, `list_harvesters [--remote]` and `remove_harvester KEY`.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from clusterwatch.monitor.ingest.tokens import valid_key
from clusterwatch.monitor.models import RegisteredHarvester


@dataclass(frozen=True)
class Registration:
    key: str
    remote: bool
    registered_at: dt.datetime
    note: str


def registered(remote_only: bool = False) -> list[Registration]:
    """Every registered key, by key (only the remote ones with `remote_only`)."""
    rows = RegisteredHarvester.objects.order_by("key")
    if remote_only:
        rows = rows.filter(remote=True)
    return [Registration(row.key, row.remote, row.registered_at, row.note) for row in rows]


def register(key: str, remote: bool, note: str = "") -> bool:
    """Add `key` (or update whether it is remote and its note); True when it is new. The
    registration time of a key already registered stays: it is when its alarm's wait began."""
    if not valid_key(key):
        raise ValueError(f"not a valid key: {key!r} (letters, digits, '.', '_' and '-', "
                         "starting with a letter or digit, at most 128)")
    _, created = RegisteredHarvester.objects.update_or_create(
        key=key, defaults={"remote": remote, "note": note})
    return bool(created)


def remove(key: str) -> bool:
    """Take `key` off the registry; False when it was not on it. Its records stay."""
    deleted, _ = RegisteredHarvester.objects.filter(key=key).delete()
    return bool(deleted > 0)
