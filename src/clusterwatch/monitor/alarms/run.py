"""One alarm run: observe, decide, commit, deliver, commit.

The order is the guarantee, as in the pool watch: the transitions and their outbox events are
committed in one transaction before any channel is tried, and the outbox is committed again
after delivery. A crash in between leaves the events queued, so the next run sends them
again: at-least-once, never at-most-once. The whole run holds the alarm lease (`lease`), so
two hosts' timers never send the same batch or overwrite each other's outbox.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from django.db import transaction

from clusterwatch.monitor.alarms import holds, outbox_store, silence_store, store
from clusterwatch.monitor.alarms.config import AlarmsConfig
from clusterwatch.monitor.alarms.lease import Lease
from clusterwatch.monitor.alarms.rules import observe_all
from clusterwatch.monitor.alarms.transitions import Change, Transition, decide
from clusterwatch.notify.channel import Channel, SendResult
from clusterwatch.notify.event import Event
from clusterwatch.notify.outbox import deliver

log = logging.getLogger(__name__)

DEAD_LETTER_HINT = ("see `clusterwatch monitor alarms_status`, fix the channel, then "
                    "`clusterwatch monitor redeliver_alarms`")
LEASE_MARGIN_S = 60.0  # evaluation and commits, on top of the channels' own timeouts


class LeaseLost(Exception):
    """The run outlived its lease and another run took it: nothing more is saved."""


@dataclass
class RunResult:
    t: float
    channels: list[str] = field(default_factory=list)
    keys: int = 0
    transitions: list[Transition] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    open_alarms: int = 0
    held: int = 0  # alarms opened this run with their alert held back
    released: int = 0  # held alerts sent this run, their hold over
    silent_closes: int = 0  # held alarms that closed (no recovery: no alert went out)
    delivery: dict[str, SendResult] = field(default_factory=dict)
    saved_after_delivery: bool = True

    def summary(self) -> dict[str, Any]:
        return {
            "t": self.t,
            "channels": self.channels,
            "keys": self.keys,
            "raised": sum(1 for c in self.transitions if c.action is Change.ALERT),
            "recovered": sum(1 for c in self.transitions if c.action is Change.RECOVER),
            "open": self.open_alarms,
            "held": self.held,
            "released": self.released,
            "delivery": {name: result.outcome for name, result in self.delivery.items()},
        }


def lease_for(channels: Sequence[Channel], config: AlarmsConfig,
              clock: Callable[[], float]) -> Lease:
    """A lease long enough for every channel to time out twice (a send and a re-statement)."""
    ttl = LEASE_MARGIN_S + sum(2 * spec.timeout_s for spec in config.channels)
    return Lease(ttl_s=ttl, clock=clock)


def run_alarms(
    config: AlarmsConfig,
    channels: Sequence[Channel],
    clock: Callable[[], float] = time.time,
    lease: Optional[Lease] = None,
) -> RunResult:
    """One complete run; raises LeaseBusy (from `lease.acquire`) when another run holds it."""
    lease = lease or lease_for(channels, config, clock)
    lease.acquire()
    try:
        return _run(config, channels, clock, lease)
    finally:
        lease.release()


def _run(config: AlarmsConfig, channels: Sequence[Channel], clock: Callable[[], float],
         lease: Lease) -> RunResult:
    now = clock()
    result = RunResult(now, [channel.name for channel in channels])
    # Read and decide outside the write transaction: SQLite's write lock (which ingest
    # also needs) is then held only for the writes. The lease keeps the alarms ours.
    facts = store.key_facts()
    open_before = store.open_alarms()
    transitions = decide(open_before, observe_all(facts, now, config.rules, open_before), now)
    result.keys, result.transitions = len(facts), transitions
    hold = holds.holder(facts, silence_store.silences(), config.windows, now)
    routing = holds.route(transitions, open_before, hold)
    result.held, result.released = len(routing.held_incidents), len(routing.released_incidents)
    result.silent_closes = routing.silent_closes
    with transaction.atomic():
        if not lease.renew():  # first statement: locks the lease row / takes SQLite's lock
            raise LeaseLost("the alarm lease expired and another run took it; nothing saved")
        outbox = outbox_store.load(for_update=True)
        # A channel new to the outbox starts after the queue but learns what was open.
        new_channel = any(channel.name not in outbox.channels for channel in channels)
        outbox.attach((channel.name for channel in channels),
                      store.firing_events() if new_channel else [])
        store.apply(transitions, now, routing.held_incidents, routing.released_incidents)
        for sent in routing.events:
            result.events.append(outbox.append(now, sent.action, sent.target, sent.status,
                                               sent.incident, sent.detail))
        silence_store.prune(now)
        for event in result.events:
            log.info("%s", event.line())
        firing = store.firing_events()
        result.open_alarms = store.open_count()  # the held ones too: open, only not sent
        outbox_store.save(outbox, result.summary())  # committed before any channel is tried
    if not channels:
        return result
    result.delivery = deliver(outbox, channels, now, firing, DEAD_LETTER_HINT)
    with transaction.atomic():
        if not lease.renew():
            # Another run took over and may have sent the same batch: a duplicate at worst,
            # and its outbox must not be overwritten with ours.
            log.error("the alarm lease expired during delivery and another run took it: "
                      "this run's delivery results are not saved (its messages may be sent "
                      "twice)")
            result.saved_after_delivery = False
            return result
        outbox_store.save(outbox, result.summary())
    return result
