"""Holding a target's alert back while a silence or a maintenance window covers it.

Pure, like the decision rules it follows: `decide` still opens and closes every incident as
the spec says (replays and the exercise call it alone and never hold anything); this module
only says which of a poll's transitions go to the outbox. An alert raised while its target is
held is kept out of the outbox and marked on the incident (`Incident.held`, saved with the
state); at the first poll after the hold ends, if the incident is still open, that alert is
queued, with its detection time and incident id, exactly once. A recovery goes out only for
an incident whose alert went out, and is never held: the operators who heard of the problem
hear of its end.

A target is described to the matchers (notify/silences.py) by its facts: a node by
`{"node": [name]}`, a GPU file by `{"gpu": [instance]}`, plus `"node": [name]` where the
instance's host is an expected node's name, so a `node:wn1*` silence holds that node's GPU
file as well. A GPU file whose node is unknown has no `node` kind: a node matcher is not about
it.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, Optional

from clusterwatch.notify.incident import Action
from clusterwatch.notify.silences import Facts, Hold, Silence, Window, hold_for
from clusterwatch.watch.decisions import Decision, Incident, TargetRecord
from clusterwatch.watch.inventory import GPU_PREFIX, NODE_PREFIX

MATCHER_KINDS = ("node", "gpu")  # what a watch silence or window may name


class Delivery(NamedTuple):
    """One transition for the outbox: a decision let through, or a held alert released."""

    t: float  # the detection time (a released alert keeps its incident's)
    action: Action
    target: str
    status: str
    incident: str
    released: bool = False  # an alert held earlier, queued now that its hold has ended


@dataclass(frozen=True)
class Holding:
    """The silences and maintenance windows one poll holds targets by."""

    silences: Sequence[Silence] = ()
    windows: Sequence[Window] = ()
    node_names: Collection[str] = field(default_factory=frozenset)  # the expected nodes

    def hold(self, target: str, now: float) -> Optional[Hold]:
        if not self.silences and not self.windows:
            return None
        return hold_for(target_facts(target, self.node_names), now, self.silences,
                        self.windows)


NO_HOLDING = Holding()


@dataclass
class Outgoing:
    """What one poll sends to the outbox, filled in by `poll.evaluate` target by target."""

    holding: Holding = NO_HOLDING
    queued: list[Delivery] = field(default_factory=list)  # in inventory order
    held: list[tuple[Decision, Hold]] = field(default_factory=list)  # alerts kept back now

    def take(self, record: TargetRecord, before: Optional[Incident],
             decision: Optional[Decision], target: str, now: float) -> None:
        delivery, hold = deliver_or_hold(record, before, decision, target, now, self.holding)
        if delivery is not None:
            self.queued.append(delivery)
        elif hold is not None and decision is not None:
            self.held.append((decision, hold))


def target_facts(target: str, node_names: Collection[str] = ()) -> Facts:
    """What the matchers see of `node:NAME` or `gpu:INSTANCE`."""
    if target.startswith(NODE_PREFIX):
        return {"node": [target[len(NODE_PREFIX):]]}
    instance = target[len(GPU_PREFIX):]
    host = instance.rpartition(":")[0] or instance
    if host.startswith("[") and host.endswith("]"):  # an IPv6 address with a port
        host = host[1:-1]
    return {"gpu": [instance], "node": [host]} if host in node_names else {"gpu": [instance]}


def deliver_or_hold(
    record: TargetRecord,
    before: Optional[Incident],
    decision: Optional[Decision],
    target: str,
    now: float,
    holding: Holding,
) -> tuple[Optional[Delivery], Optional[Hold]]:
    """What of this poll's transition for `target` goes to the outbox, and the hold, if any,
    that kept an alert back.

    `before` is the incident open before `decide` ran, `record` the record after it.
    Mutates the incident's `held` flag. Called for every target, so the common case (no
    decision, no held incident) returns at once without matching anything.
    """
    if decision is None:
        incident = record.incident
        if incident is None or not incident.held:
            return None, None
        hold = holding.hold(target, now)
        if hold is not None:
            return None, hold
        incident.held = False  # saved with the queued alert, atomically: exactly once
        return Delivery(incident.opened, Action.ALERT, target, incident.status, incident.id,
                        released=True), None
    if decision.action is Action.RECOVER:
        if before is not None and before.held:
            return None, None  # its alert never went out: it closes silently
        return _delivery(decision), None
    hold = holding.hold(target, now)
    if hold is not None:
        assert record.incident is not None
        record.incident.held = True
        return None, hold
    return _delivery(decision), None


def _delivery(decision: Decision) -> Delivery:
    return Delivery(decision.t, decision.action, decision.target, decision.status.value,
                    decision.incident)
