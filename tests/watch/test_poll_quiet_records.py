"""`poll.evaluate` keeps only the records with something to remember, and decides exactly as
when it kept one record per target (hypothesis, against that earlier loop).

The earlier loop is written out below as the oracle: `decide` for every expected target,
every record kept. Over arbitrary polls of a few targets (missing, silent, invalid and
future-dated rows, failed sources, gaps and backward clock steps, a silence that holds one
node and its GPU file for a while) both give the same decisions, queue and hold the same
events, log the same lines, and hold the same windows and incidents; the new map lacks only
quiet records, and `watch status` shows from it the holds the poll applied.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from types import MappingProxyType
from typing import Any, Optional

from hypothesis import given, settings
from hypothesis import strategies as st

from clusterwatch.notify.silences import Matcher, Silence
from clusterwatch.watch.condor import NodeObservation, collector_now
from clusterwatch.watch.decisions import (
    DEFAULT_THRESHOLDS,
    Decision,
    Observation,
    TargetRecord,
    Thresholds,
    classify_heard,
    classify_mtime,
    decide,
)
from clusterwatch.watch.holds import Holding, Outgoing
from clusterwatch.watch.inventory import GPU_PREFIX, NODE_PREFIX
from clusterwatch.watch.poll import evaluate, is_quiet
from clusterwatch.watch.prometheus import GpuObservation
from clusterwatch.watch.state import WatchState
from clusterwatch.watch.status import summary

T0 = 1_790_949_600.0
NODES = ("n1", "n2", "n3")
GPUS = ("n1:9100", "g2:9100", "g3:9100")  # n1's GPU file is held with n1
# n1 is silenced for a while in the middle of every run.
SILENCE = Silence(id="s1", matchers=(Matcher("node", "n1"),), starts_at=T0 + 1200,
                  ends_at=T0 + 3000, comment="maintenance", author="test", created_at=T0)

log = logging.getLogger("clusterwatch.watch.poll")


def dense_evaluate(records: dict[str, TargetRecord], nodes: tuple[str, ...],
                   gpus: tuple[str, ...], now: float, node_obs: NodeObservation,
                   gpu_obs: GpuObservation, thresholds: Thresholds, outgoing: Outgoing
                   ) -> tuple[dict[str, TargetRecord], list[Decision]]:
    """The loop before issue 23: one record per expected target, each decided every poll."""
    updated: dict[str, TargetRecord] = {}
    decisions: list[Decision] = []
    reference = collector_now(node_obs, now) if node_obs.heard else now
    for name in nodes:
        target = NODE_PREFIX + name
        record = records.get(target) or TargetRecord()
        heard_at = None
        if node_obs.error is not None:
            observation = Observation.UNKNOWN
        elif name in node_obs.machines:
            observation = Observation.PRESENT
            last_heard = node_obs.heard.get(name)
            if last_heard is not None:
                observation, heard_at = classify_heard(now, last_heard, reference, thresholds)
        else:
            observation = Observation.MISSING
        _step(updated, decisions, outgoing, record, target, now, observation, None, heard_at,
              thresholds)
    for instance in gpus:
        target = GPU_PREFIX + instance
        record = records.get(target) or TargetRecord()
        mtime = gpu_obs.mtimes.get(instance)
        if gpu_obs.error is not None:
            observation = Observation.UNKNOWN
        elif instance in gpu_obs.invalid:
            log.warning("%s: unknown this poll: %s", target, gpu_obs.invalid[instance])
            observation = Observation.UNKNOWN
        elif mtime is None:
            observation = Observation.MISSING
        else:
            observation = classify_mtime(now, mtime, thresholds)
            if observation is Observation.UNKNOWN:
                log.warning("%s: unknown this poll: file mtime %r is not in the past",
                            target, mtime)
        _step(updated, decisions, outgoing, record, target, now, observation, mtime, None,
              thresholds)
    return updated, decisions


def _step(updated: dict[str, TargetRecord], decisions: list[Decision], outgoing: Outgoing,
          record: TargetRecord, target: str, now: float, observation: Observation,
          mtime: Optional[float], heard_at: Optional[float], thresholds: Thresholds) -> None:
    before = record.incident
    decision = decide(record, target, now, observation, mtime, thresholds, heard_at)
    if decision is not None:
        decisions.append(decision)
    if decision is not None or (record.incident is not None and record.incident.held):
        outgoing.take(record, before, decision, target, now)
    updated[target] = record


# --- generated polls ----------------------------------------------------------------------

steps = st.sampled_from([60.0] * 10 + [0.0, 30.0, 120.0, 181.0, 900.0, -45.0])
node_states = st.sampled_from(["present"] * 4 + ["missing"] * 3 + ["heard", "silent"])
gpu_states = st.one_of(
    st.sampled_from(["missing", "invalid", "future", "zero"]),
    st.floats(min_value=0, max_value=2400, allow_nan=False),  # the file's age
)
polls = st.lists(st.tuples(
    steps,
    st.one_of(st.none(), st.tuples(*[node_states] * len(NODES))),  # None: condor failed
    st.one_of(st.none(), st.tuples(*[gpu_states] * len(GPUS))),  # None: the answer failed
), max_size=80)


def node_observation(now: float, states: Optional[tuple[str, ...]]) -> NodeObservation:
    if states is None:
        return NodeObservation(error="exited 1: no collector")
    machines = frozenset(n for n, s in zip(NODES, states) if s != "missing")
    heard = {n: now - (5 if s == "heard" else 1500) for n, s in zip(NODES, states)
             if s in ("heard", "silent")}
    return NodeObservation(machines=machines, heard=MappingProxyType(heard),
                           heard_times=tuple(heard.values()))


def gpu_observation(now: float, states: Optional[tuple[Any, ...]]) -> GpuObservation:
    if states is None:
        return GpuObservation(error="query status 'error'")
    mtimes: dict[str, float] = {}
    invalid: dict[str, str] = {}
    for instance, state in zip(GPUS, states):
        if state == "invalid":
            invalid[instance] = "two rows for one instance"
        elif state == "future":
            mtimes[instance] = now + 30
        elif state == "zero":
            mtimes[instance] = 0.0
        elif state != "missing":
            mtimes[instance] = now - state
    return GpuObservation(mtimes=mtimes, invalid=invalid)


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@contextmanager
def logged() -> Iterator[list[str]]:
    handler = Lines()
    log.addHandler(handler)
    try:
        yield handler.lines
    finally:
        log.removeHandler(handler)


def remembered(record: TargetRecord) -> tuple[Any, ...]:
    """What a record decides by: everything but the previous poll's time."""
    return (record.absent_since, record.good_since, record.good_first_mtime,
            None if record.incident is None else replace(record.incident))


@settings(max_examples=300, deadline=None)
@given(polls)
def test_it_decides_as_when_every_target_kept_a_record(sequence) -> None:  # type: ignore[no-untyped-def]
    thresholds = DEFAULT_THRESHOLDS
    holding = Holding([SILENCE], (), frozenset(NODES))
    sparse: dict[str, TargetRecord] = {}
    dense: dict[str, TargetRecord] = {}
    now = T0
    for step, node_states_, gpu_states_ in sequence:
        now += step
        node_obs = node_observation(now, node_states_)
        gpu_obs = gpu_observation(now, gpu_states_)
        sparse_out, dense_out = Outgoing(holding), Outgoing(holding)
        with logged() as sparse_lines:
            sparse, sparse_decisions = evaluate(sparse, NODES, GPUS, now, node_obs, gpu_obs,
                                                thresholds, sparse_out)
        with logged() as dense_lines:
            dense, dense_decisions = dense_evaluate(dense, NODES, GPUS, now, node_obs,
                                                    gpu_obs, thresholds, dense_out)
        assert sparse_decisions == dense_decisions
        assert sparse_out.queued == dense_out.queued
        assert sparse_out.held == dense_out.held
        assert sparse_lines == dense_lines
        assert not any(is_quiet(record) for record in sparse.values())
        assert list(sparse) == [t for t, r in dense.items() if not is_quiet(r)]
        assert {t: remembered(r) for t, r in sparse.items()} == {
            t: remembered(r) for t, r in dense.items() if t in sparse}
        # `watch status` shows the same holds the poll applied, from the sparse records.
        shown = summary(WatchState(records=sparse, silences=[SILENCE]), now,
                        node_names=NODES)["open_incidents"]
        assert shown == summary(WatchState(records=dense, silences=[SILENCE]), now,
                                node_names=NODES)["open_incidents"]
        for item in shown:
            if item["held"]:
                hold = holding.hold(item["target"], now)
                assert item["held_by"] == (None if hold is None else hold.by)


def test_a_record_kept_in_a_state_file_decides_as_before_once_it_turns_quiet() -> None:
    """A state of the earlier program keeps a record per target: quiet ones go at the next
    poll, the others stay as they were."""
    now = T0 + 60
    records = {"node:n1": TargetRecord(last_poll=T0),
               "node:n2": TargetRecord(last_poll=T0, absent_since=T0 - 300),
               "gpu:n1:9100": TargetRecord(last_poll=T0)}
    kept, decisions = evaluate(records, NODES, GPUS, now,
                               NodeObservation(machines=frozenset({"n1", "n3"})),
                               GpuObservation(mtimes={g: now - 10 for g in GPUS}),
                               DEFAULT_THRESHOLDS)
    assert decisions == []
    assert list(kept) == ["node:n2"] and kept["node:n2"].absent_since == T0 - 300
