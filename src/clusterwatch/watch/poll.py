"""One poll: observe, decide, save, deliver, report.

The order is the guarantee: new transitions are saved together with the records (durably)
before any channel is tried, and the outbox is saved again after delivery. A crash at any
point leaves either the previous state or the new one, and an unsent transition stays queued.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Callable, Optional, TypeVar

from clusterwatch.notify.channel import Channel, SendResult
from clusterwatch.notify.event import Event
from clusterwatch.notify.incident import Action
from clusterwatch.notify.outbox import deliver
from clusterwatch.notify.silences import prune
from clusterwatch.watch import health, state
from clusterwatch.watch.condor import NodeObservation, collector_now, query_machines
from clusterwatch.watch.config import WatchConfig
from clusterwatch.watch.decisions import (
    Decision,
    Observation,
    TargetRecord,
    Thresholds,
    classify_heard,
    classify_mtime,
    decide,
)
from clusterwatch.watch.holds import Holding, Outgoing
from clusterwatch.watch.inventory import (
    GPU_PREFIX,
    GPUS_FILE,
    NODE_PREFIX,
    NODES_FILE,
    read_inventory,
)
from clusterwatch.watch.prometheus import GpuObservation, gpu_file_query, query_gpu_files

log = logging.getLogger(__name__)

# What the log tells an operator to do about dead letters (the alarms name their own commands).
DEAD_LETTER_HINT = ("see `clusterwatch watch status` and fix the channel, then "
                    "`clusterwatch watch redeliver`")

_Obs = TypeVar("_Obs", NodeObservation, GpuObservation)


@dataclass
class PollResult:
    t: float
    decisions: list[Decision] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)  # the decisions, as queued
    node_error: Optional[str] = None
    gpu_error: Optional[str] = None
    delivery: dict[str, SendResult] = field(default_factory=dict)
    state_error: Optional[str] = None  # the state file was damaged: what was kept


def evaluate(
    records: dict[str, TargetRecord],
    nodes: Sequence[str],
    gpus: Sequence[str],
    now: float,
    node_obs: NodeObservation,
    gpu_obs: GpuObservation,
    thresholds: Thresholds,
    outgoing: Optional[Outgoing] = None,
) -> tuple[dict[str, TargetRecord], list[Decision]]:
    """Apply one poll's observations to every expected target.

    Returns the new record map and the transitions in inventory order. With `outgoing`,
    also what goes to the outbox: the transitions its silences and windows do not hold
    back, and held alerts released (holds.py); without it, nothing is held.

    Only records with something to remember are kept (`is_quiet`): a quiet record decides
    exactly as a new one does, since its last poll time only ever breaks windows it does not
    have. So a target without a record that is seen well needs no work at all, the map holds
    the targets in trouble rather than all 100,000, and targets no longer in an inventory
    are forgotten.
    """
    updated: dict[str, TargetRecord] = {}
    decisions: list[Decision] = []

    def apply(target: str, record: Optional[TargetRecord], observation: Observation,
              mtime: Optional[float] = None, heard_at: Optional[float] = None) -> None:
        if record is None:
            record = TargetRecord()
        before = record.incident
        decision = decide(record, target, now, observation, mtime, thresholds, heard_at)
        if decision is not None:
            decisions.append(decision)
        if outgoing is not None and (decision is not None or (
                record.incident is not None and record.incident.held)):
            outgoing.take(record, before, decision, target, now)
        if not is_quiet(record):
            updated[target] = record

    # The loops run once per target: attribute lookups are hoisted out of them, and the
    # common case (seen well, no record) is decided inline.
    node_records = _checked(records, NODE_PREFIX)
    if node_obs.error is not None:
        for name in nodes:  # unknown: only the records' windows break
            if name in node_records:
                apply(NODE_PREFIX + name, node_records[name], Observation.UNKNOWN)
    else:
        machines, heard = node_obs.machines, node_obs.heard
        # The collector's clock, once per poll: a node's silence is measured on it.
        reference = collector_now(node_obs, now) if heard else now
        for name in nodes:
            record = node_records.get(name)
            if name not in machines:
                apply(NODE_PREFIX + name, record, Observation.MISSING)
                continue
            last_heard = heard.get(name) if heard else None
            if last_heard is None:
                if record is not None:
                    apply(NODE_PREFIX + name, record, Observation.PRESENT)
                continue
            observation, heard_at = classify_heard(now, last_heard, reference, thresholds)
            if record is not None or observation is not Observation.PRESENT:
                apply(NODE_PREFIX + name, record, observation, None, heard_at)
    gpu_records = _checked(records, GPU_PREFIX)
    if gpu_obs.error is not None:
        for instance in gpus:
            if instance in gpu_records:
                apply(GPU_PREFIX + instance, gpu_records[instance], Observation.UNKNOWN)
        return updated, decisions
    mtimes, invalid = gpu_obs.mtimes, gpu_obs.invalid
    fail_s = thresholds.fail_s
    for instance in gpus:
        record = gpu_records.get(instance)
        mtime = mtimes.get(instance)
        if (mtime is not None and record is None and 0 < mtime <= now
                and now - mtime < fail_s and not (invalid and instance in invalid)):
            continue  # fresh or aging (classify_mtime), nothing to remember
        target = GPU_PREFIX + instance
        if instance in invalid:
            log.warning("%s: unknown this poll: %s", target, invalid[instance])
            apply(target, record, Observation.UNKNOWN)
        elif mtime is None:
            apply(target, record, Observation.MISSING)
        else:
            observation = classify_mtime(now, mtime, thresholds)
            if observation is Observation.UNKNOWN:
                log.warning("%s: unknown this poll: file mtime %r is not in the past",
                            target, mtime)
            apply(target, record, observation, mtime)
    return updated, decisions


def is_quiet(record: TargetRecord) -> bool:
    """No pending window and no open incident: the record decides as a new one would."""
    return (record.incident is None and record.absent_since is None
            and record.good_since is None and record.good_first_mtime is None)


def _checked(records: dict[str, TargetRecord], prefix: str) -> dict[str, TargetRecord]:
    """The records of one check, by the name its inventory lists."""
    cut = len(prefix)
    return {target[cut:]: record for target, record in records.items()
            if target.startswith(prefix)}


def firing_events(records: dict[str, TargetRecord]) -> list[Event]:
    """The alert of every open incident whose alert went out, as channels that re-state
    alerts want them (a held one is told when its hold ends, like any other channel)."""
    return [
        Event(0, record.incident.opened, Action.ALERT, target, record.incident.status,
              record.incident.id)
        for target, record in records.items()
        if record.incident is not None and not record.incident.held
    ]


def run_poll(
    config: WatchConfig,
    channels: Sequence[Channel],
    clock: Callable[[], float] = time.time,
) -> PollResult:
    """One complete poll under the state lock."""
    nodes = read_inventory(config.config_dir / NODES_FILE)
    gpus = read_inventory(config.config_dir / GPUS_FILE)
    started = time.monotonic()
    with state.locked(config.state_dir, config.lock_timeout_s), _collector_paused():
        watch_state = state.load(config.state_dir,
                                 channel_names=[channel.name for channel in channels])
        now = clock()
        node_obs = _observe(
            lambda: query_machines(config.condor_status, config.condor_timeout_s),
            lambda error: NodeObservation(error=error),
        ) if nodes else NodeObservation()
        gpu_obs = _observe(
            lambda: query_gpu_files(config.prometheus_url,
                                    gpu_file_query(config.prometheus_job), now,
                                    config.prometheus_timeout_s),
            lambda error: GpuObservation(error=error),
        ) if gpus else GpuObservation()
        for source, error in (("condor_status", node_obs.error), ("Prometheus", gpu_obs.error)):
            if error is not None:
                log.error("%s: %s; the check is unknown for every target this poll",
                          source, error)
        # Incidents open before this poll, for channels that are new to the state.
        new_channel = any(c.name not in watch_state.outbox.channels for c in channels)
        open_before = firing_events(watch_state.records) if new_channel else []
        # Ended silences are dropped a while after they end (kept for the record till then).
        watch_state.silences = prune(watch_state.silences, now)
        outgoing = Outgoing(Holding(watch_state.silences, config.windows,
                                    frozenset(nodes) if watch_state.silences
                                    or config.windows else frozenset()))
        watch_state.records, decisions = evaluate(
            watch_state.records, nodes, gpus, now, node_obs, gpu_obs, config.thresholds,
            outgoing)
        outbox = watch_state.outbox
        # Before this poll's events are queued: a new channel starts after the queue but
        # learns the incidents that were open before this poll.
        outbox.attach((channel.name for channel in channels), open_before)
        if not channels:
            log.warning("no channel is configured: transitions are logged only (add "
                        "CONFIG_DIR/slack_webhook or [[channels]] in watch.toml); open "
                        "incidents are sent to a channel when one is added")
        events = [outbox.append(item.t, item.action, item.target, item.status, item.incident)
                  for item in outgoing.queued]
        for event, item in zip(events, outgoing.queued):
            log.warning("%s%s", event.line(), " (held until now)" if item.released else "")
        for decision, hold in outgoing.held:
            log.warning("held back: %s %s (%s) incident %s: %s", decision.action.value.upper(),
                        decision.target, decision.status.value, decision.incident,
                        hold.describe())
        sources_ok = node_obs.error is None and gpu_obs.error is None
        watch_state.last_poll = {
            "t": now,
            "last_success_t": now if sources_ok else watch_state.last_poll.get("last_success_t"),
            "node_error": node_obs.error,
            "gpu_error": gpu_obs.error,
            "nodes": len(nodes),
            "gpus": len(gpus),
            "transitions": len(decisions),
            "duration_s": round(time.monotonic() - started, 3),  # observe and decide
            # The last damage found, kept until another: status and health show it.
            "state_damage": watch_state.last_poll.get("state_damage"),
        }
        records_json = state.save(config.state_dir, watch_state)  # before any send

        before = outbox.to_json()
        results = deliver(outbox, channels, now, firing_events(watch_state.records),
                          DEAD_LETTER_HINT)
        if outbox.to_json() != before:  # the records are saved already; spare a rewrite
            state.save(config.state_dir, watch_state, records_json)  # records unchanged
        health.write(config, watch_state)
    return PollResult(now, decisions, events, node_obs.error, gpu_obs.error, results,
                      watch_state.damage)


def _observe(query: Callable[[], _Obs], failed: Callable[[str], _Obs]) -> _Obs:
    """One source's observation; an unexpected failure in its adapter makes it unknown.

    The adapters turn every failure they know of into `unknown` themselves. This is the
    backstop for the ones nobody foresaw: without it the poll would stop before saving, and
    the other check's result and the queued messages would wait for a poll that never
    gets further.
    """
    try:
        return query()
    except Exception as exc:
        log.exception("unexpected failure while observing (%s)", type(exc).__name__)
        return failed(f"internal error ({type(exc).__name__})")


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for one poll.

    A poll builds several container objects per target (parsed answers, rows, records) that
    live until it ends and form no reference cycles. Left on, the collector scans them
    over and over as they accumulate: a third of the poll at 100,000 targets. Reference
    counting still frees everything as usual; cycles wait for the collector's next run.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
