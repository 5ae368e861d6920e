"""The harvester registry: the keys the monitor expects a record from, read by every reader
(hosts page, queue pages, alarms, and the remote builder's timer: `remote_harvester_report
--registered` builds every remote key from what its entry keeps, `Builder`).

Managed in the admin (RegisteredHarvester) and with `clusterwatch monitor register_harvester
KEY [--remote [--harvester-id ID (--queue-config FILE | --iri-...)]] [--note TEXT]`,
`list_harvesters [--remote]` and `remove_harvester KEY`.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, fields
from typing import Optional

from clusterwatch.monitor.core.models import RegisteredHarvester
from clusterwatch.monitor.core.record_keys import valid_key


@dataclass(frozen=True)
class Builder:
    """What the remote builder needs for a remote key, as `remote_harvester_report` takes it:
    the harvester id, and the queue configuration as a file or through the IRI API ("" for
    what is not given; checking it is the builder's, so a bad entry is that key's exit 78)."""

    harvester_id: str = ""
    queue_config: str = ""
    iri_url: str = ""
    iri_resource: str = ""
    iri_path: str = ""
    iri_token_file: str = ""


BUILDER_FIELDS = tuple(field.name for field in fields(Builder))


@dataclass(frozen=True)
class Registration:
    key: str
    remote: bool
    registered_at: dt.datetime
    note: str
    builder: Builder = Builder()


def registered(remote_only: bool = False) -> list[Registration]:
    """Every registered key, by key (only the remote ones with `remote_only`)."""
    rows = RegisteredHarvester.objects.order_by("key")
    if remote_only:
        rows = rows.filter(remote=True)
    return [Registration(row.key, row.remote, row.registered_at, row.note,
                         Builder(**{name: getattr(row, name) for name in BUILDER_FIELDS}))
            for row in rows]


def register(key: str, remote: bool, note: str = "", builder: Optional[Builder] = None) -> bool:
    """Add `key` (or update whether it is remote, its note and its builder's settings, which
    a key not remote has none of); True when it is new. The registration time of a key
    already registered stays: it is when its alarm's wait began."""
    if not valid_key(key):
        raise ValueError(f"not a valid key: {key!r} (letters, digits, '.', '_' and '-', "
                         "starting with a letter or digit, at most 128)")
    if builder is not None and builder != Builder() and not remote:
        raise ValueError("the remote builder's settings are for a --remote key only")
    kept = builder or Builder()
    _, created = RegisteredHarvester.objects.update_or_create(
        key=key, defaults={"remote": remote, "note": note,
                           **{name: getattr(kept, name) for name in BUILDER_FIELDS}})
    return bool(created)


def remove(key: str) -> bool:
    """Take `key` off the registry; False when it was not on it. Its records stay."""
    deleted, _ = RegisteredHarvester.objects.filter(key=key).delete()
    return bool(deleted > 0)
