"""Who watches the watch: its own health for node_exporter's textfile collector."""

from __future__ import annotations

import logging
from typing import Optional

from clusterwatch.atomic_write import write_atomically
from clusterwatch.watch.config import WatchConfig
from clusterwatch.watch.state import WatchState

log = logging.getLogger(__name__)

HEALTH_FILE = "clusterwatch_watch.prom"


def render(watch_state: WatchState) -> str:
    poll = watch_state.last_poll
    lines: list[str] = []

    def gauge(name: str, help_text: str, samples: list[tuple[str, float]]) -> None:
        lines.append(f"# HELP {name} {help_text}")
        lines.append(f"# TYPE {name} gauge")
        lines.extend(f"{name}{labels} {float(value)!r}" for labels, value in samples)

    gauge("clusterwatch_watch_last_poll_timestamp_seconds",
          "When the last completed poll ran (alert when this falls behind).",
          [("", float(poll.get("t", 0)))])
    gauge("clusterwatch_watch_last_successful_poll_timestamp_seconds",
          "When a poll last ran with every source answering usably (0: never).",
          [("", float(poll.get("last_success_t") or 0))])
    gauge("clusterwatch_watch_poll_duration_seconds",
          "Time the last poll took to observe and decide (delivery excluded).",
          [("", float(poll.get("duration_s", 0)))])
    damage = poll.get("state_damage") or {}
    gauge("clusterwatch_watch_state_damage_timestamp_seconds",
          "When a poll last found the state file damaged and moved it aside (0: never).",
          [("", float(damage.get("t") or 0))])
    gauge("clusterwatch_watch_source_up",
          "1 if the source answered usably in the last poll, 0 if every target was unknown.",
          [('{source="condor_status"}', 0.0 if poll.get("node_error") else 1.0),
           ('{source="prometheus"}', 0.0 if poll.get("gpu_error") else 1.0)])
    # The inventories' sizes: the records are only the targets with something to remember.
    targets = {"node": int(poll.get("nodes", 0)), "gpu": int(poll.get("gpus", 0))}
    incidents = {"node": 0, "gpu": 0}
    held = {"node": 0, "gpu": 0}
    for target, record in watch_state.records.items():
        check = target.partition(":")[0]
        if record.incident is not None:
            incidents[check] = incidents.get(check, 0) + 1
            if record.incident.held:
                held[check] = held.get(check, 0) + 1
    gauge("clusterwatch_watch_targets", "Expected targets per check.",
          [(f'{{check="{c}"}}', float(n)) for c, n in sorted(targets.items())])
    gauge("clusterwatch_watch_open_incidents", "Open incidents per check.",
          [(f'{{check="{c}"}}', float(n)) for c, n in sorted(incidents.items())])
    gauge("clusterwatch_watch_held_incidents",
          "Open incidents whose alert a silence or maintenance window holds back.",
          [(f'{{check="{c}"}}', float(n)) for c, n in sorted(held.items())])
    gauge("clusterwatch_watch_active_silences", "Silences in force at the last poll.",
          [("", float(sum(s.active(float(poll.get("t", 0))) for s in watch_state.silences)))])
    outbox = watch_state.outbox
    channels = sorted(outbox.channels.items())
    gauge("clusterwatch_watch_pending_messages", "Events queued for a channel, not yet sent.",
          [(f'{{channel="{_escape(n)}"}}', float(len(outbox.pending(n)))) for n, _ in channels])
    gauge("clusterwatch_watch_dead_letter_messages",
          "Events a channel rejected permanently, kept for an operator.",
          [(f'{{channel="{_escape(n)}"}}', float(len(s.dead))) for n, s in channels])
    gauge("clusterwatch_watch_last_delivery_success_timestamp_seconds",
          "When a channel last acknowledged a batch (0: never).",
          [(f'{{channel="{_escape(n)}"}}', float(s.last_success_t or 0)) for n, s in channels])
    gauge("clusterwatch_watch_last_delivery_error_timestamp_seconds",
          "When a channel's last delivery error happened; its kind is a label.",
          [(f'{{channel="{_escape(n)}",kind="{_escape(s.last_error)}"}}',
            float(s.last_error_t or 0)) for n, s in channels if s.last_error])
    return "\n".join(lines) + "\n"


def write(config: WatchConfig, watch_state: WatchState) -> None:
    """Write the health file into the state dir, and to the configured textfile path."""
    text = render(watch_state).encode()
    # The state dir's copy is private like the rest of it; node_exporter reads the other.
    paths = [(config.state_dir / HEALTH_FILE, 0o600)]
    if config.health_textfile is not None:
        paths.append((config.health_textfile, 0o644))
    for path, mode in paths:
        try:
            write_atomically(path, text, mode=mode, durable=False)
        except OSError as exc:
            log.error("cannot write health file %s: %s", path, exc.strerror)


def _escape(value: Optional[str]) -> str:
    return (value or "").replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
