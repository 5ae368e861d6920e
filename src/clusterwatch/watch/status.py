"""`clusterwatch watch status`: open incidents, queues, dead letters, last poll."""

from __future__ import annotations

import json
import time
from collections.abc import Collection, Sequence
from typing import IO, Any, Optional

from clusterwatch.notify.event import format_utc
from clusterwatch.notify.outbox_status import ChannelWording, outbox_sections, write_channels
from clusterwatch.notify.silences import Window, utc
from clusterwatch.watch.holds import Holding
from clusterwatch.watch.inventory import GPU_PREFIX
from clusterwatch.watch.silence_cli import listing
from clusterwatch.watch.state import WatchState

WORDING = ChannelWording(no_channels="channels: none configured (transitions are only logged)")


def summary(watch_state: WatchState, now: float, windows: Sequence[Window] = (),
            node_names: Optional[Collection[str]] = frozenset()) -> dict[str, Any]:
    """A held incident says what holds it now; one whose hold has ended (`held_by` None)
    goes out at the next poll.

    `node_names` are the expected nodes, as the poll holds by them: a GPU file on one of
    them is held by that node's silences and windows too. The state cannot say which they
    are (a node seen well keeps no record). None: the inventory cannot be read, so a held
    GPU file found no hold has `hold_known` false (the poll fails until it is fixed).
    """
    known = node_names is not None
    holding = Holding(watch_state.silences, windows, frozenset(node_names or ()))
    incidents = []
    for target, record in sorted(watch_state.records.items()):
        if record.incident is None:
            continue
        item: dict[str, Any] = {"target": target, "status": record.incident.status,
                                "since": record.incident.opened,
                                "incident": record.incident.id, "held": record.incident.held}
        if record.incident.held:
            hold = holding.hold(target, now)
            item.update(held_by=None if hold is None else hold.by,
                        held_until=None if hold is None else hold.until,
                        hold=None if hold is None else hold.describe(),
                        hold_known=hold is not None or known
                        or not target.startswith(GPU_PREFIX))
        incidents.append(item)
    return {
        "last_poll": watch_state.last_poll,
        "open_incidents": incidents,
        "silences": [row for row in listing(watch_state.silences, now)
                     if row["state"] == "active"],
        "maintenance": [
            {"comment": window.comment, "matchers": [str(m) for m in window.matchers],
             "from": opened[0], "until": opened[1], "describe": window.describe()}
            for window in windows
            for opened in [window.open_at(now)] if opened is not None
        ],
        **outbox_sections(watch_state.outbox, now),
    }


def print_status(watch_state: WatchState, out: IO[str], as_json: bool = False,
                 windows: Sequence[Window] = (),
                 node_names: Optional[Collection[str]] = frozenset()) -> None:
    now = time.time()
    data = summary(watch_state, now, windows, node_names)
    if as_json:
        json.dump(data, out, indent=2)
        out.write("\n")
        return
    poll = data["last_poll"]
    if poll:
        out.write(f"last poll: {format_utc(poll['t'])} ({now - poll['t']:.0f} s ago), "
                  f"{poll.get('nodes', 0)} nodes, {poll.get('gpus', 0)} GPU workers, "
                  f"{poll.get('duration_s', 0):.3f} s to observe and decide\n")
        for key, source in (("node_error", "condor_status"), ("gpu_error", "Prometheus")):
            if poll.get(key):
                out.write(f"  {source} failed: {poll[key]}\n")
        damage = poll.get("state_damage")
        if damage:
            out.write(f"state file damaged at {format_utc(damage['t'])} "
                      f"({now - damage['t']:.0f} s ago): {damage['detail']}\n")
    else:
        out.write("last poll: never\n")
    incidents = data["open_incidents"]
    out.write(f"open incidents: {len(incidents)}\n")
    for item in incidents:
        held = ""
        if item["held"]:
            held = (f" HELD, {item['hold']}" if item["hold"] else
                    " HELD, by what is not known: the inventory cannot be read"
                    if not item["hold_known"] else
                    " HELD, its hold has ended: the alert goes out at the next poll")
        out.write(f"  {item['target']} ({item['status']}) since {format_utc(item['since'])} "
                  f"incident {item['incident']}{held}\n")
    out.write(f"active silences: {len(data['silences'])}\n")
    for row in data["silences"]:
        out.write(f"  {row['id']} {' '.join(row['matchers'])} until {utc(row['until'])} "
                  f"by {row['author']}: {row['comment']}\n")
    if data["maintenance"]:
        out.write(f"maintenance windows open: {len(data['maintenance'])}\n")
    for window in data["maintenance"]:
        out.write(f"  {window['describe']}; open until {utc(window['until'])}\n")
    write_channels(data["channels"], out, WORDING)
