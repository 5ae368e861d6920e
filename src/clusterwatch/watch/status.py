"""`clusterwatch watch status`: open incidents, queues, dead letters, last poll."""

from __future__ import annotations

import json
import time
from typing import IO, Any

from clusterwatch.notify.event import format_utc
from clusterwatch.notify.outbox_status import ChannelWording, outbox_sections, write_channels
from clusterwatch.watch.state import WatchState

WORDING = ChannelWording(no_channels="channels: none configured (transitions are only logged)")


def summary(watch_state: WatchState, now: float) -> dict[str, Any]:
    return {
        "last_poll": watch_state.last_poll,
        "open_incidents": [
            {"target": target, "status": record.incident.status,
             "since": record.incident.opened, "incident": record.incident.id}
            for target, record in sorted(watch_state.records.items())
            if record.incident is not None
        ],
        **outbox_sections(watch_state.outbox, now),
    }


def print_status(watch_state: WatchState, out: IO[str], as_json: bool = False) -> None:
    now = time.time()
    data = summary(watch_state, now)
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
        out.write(f"  {item['target']} ({item['status']}) since {format_utc(item['since'])} "
                  f"incident {item['incident']}\n")
    write_channels(data["channels"], out, WORDING)
