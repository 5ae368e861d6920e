"""The remote record's `instance` section, from the PanDA server's `harvester_instances`.

What the server has of the harvester's heartbeat (facts from PanDAWMS/panda-server 9cc36033,
`harvesterIsAlive`): the harvester calls it at start-up with its start time, version and
commit stamp, then about every 10 minutes with nothing, and each call sets `lastupdate`; so
a last heartbeat up to some ten minutes old is a live harvester. A first call that finds no
row inserts one with no start time or version. `hostname` is the address the server saw
the call come from (empty, or an IP address): it is shown as `heartbeat_from` and never
used to identify the harvester, which only its id does.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from clusterwatch.monitor.panda.remote.times import latest_per, seconds, utc_text
from clusterwatch.monitor.panda.server_rows import InstanceRow, Rows, SourceFailed


def instance_section(harvester_id: str, rows: Rows[InstanceRow], now: dt.datetime,
                     nothing_else: bool) -> dict[str, Any]:
    """`instance`; `nothing_else`: no other table has a row for this id either."""
    if isinstance(rows, SourceFailed):
        return {"error": f"harvester_instances: {rows.reason}", "harvester_id": harvester_id}
    # The id is the table's primary key: one row, or (a copy of the table) its latest.
    mine = latest_per((row for row in rows if row["harvester_id"] == harvester_id),
                      lambda row: row["harvester_id"], lambda row: row["lastupdate"])
    if not mine:
        error = (f"no harvester_instances row for {harvester_id!r}: the PanDA server has "
                 "had no heartbeat from it")
        if nothing_else:
            error += (" and has no worker, dialog, metrics or worker stats row for it either"
                      " (is the harvester id right?)")
        return {"error": error, "harvester_id": harvester_id}
    row = mine[harvester_id]
    beat = row["lastupdate"]
    section: dict[str, Any] = {
        "harvester_id": harvester_id,
        "start": utc_text(row["starttime"]),
        "last_heartbeat": utc_text(beat),
        "heartbeat_age_s": None,
        "version": row["sw_version"],
        "commit_stamp": row["commit_stamp"],
        "heartbeat_from": row["hostname"],
    }
    if beat is not None:
        age = seconds(now, beat)
        section["heartbeat_age_s"] = max(age, 0)
        if age < 0:  # the server's clock or this host's is off: say so, never a negative age
            section["heartbeat_ahead_s"] = -age
    return section

