"""`clusterwatch watch status`: open incidents, queues, dead letters, last poll."""

from __future__ import annotations

import json
import time
from typing import IO, Any

from clusterwatch.notify.event import format_utc
from clusterwatch.watch.state import WatchState


def summary(watch_state: WatchState, now: float) -> dict[str, Any]:
    outbox = watch_state.outbox
    return {
        "last_poll": watch_state.last_poll,
        "open_incidents": [
            {"target": target, "status": record.incident.status,
             "since": record.incident.opened, "incident": record.incident.id}
            for target, record in sorted(watch_state.records.items())
            if record.incident is not None
        ],
        "channels": outbox.channel_summaries(now),
        "recent_attempts": [attempt.to_json() for attempt in outbox.history[-20:]],
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
    if not data["channels"]:
        out.write("channels: none configured (transitions are only logged)\n")
    for name, channel in data["channels"].items():
        state = f"{len(channel['pending'])} pending, {len(channel['dead_letters'])} dead letters"
        if channel["rate_limited_until"]:
            state += f", rate-limited until {format_utc(channel['rate_limited_until'])}"
        if channel["last_error"]:
            state += (f", last error {channel['last_error']} at "
                      f"{format_utc(channel['last_error_t'])}")
        out.write(f"channel {name}: {state}\n")
        for label, key in (("pending", "pending"), ("DEAD", "dead_letters")):
            for event in channel[key]:
                out.write(f"  {label}: {format_utc(event['t'])} {event['action'].upper()} "
                          f"{event['target']} ({event['status']}) incident {event['incident']}\n")
