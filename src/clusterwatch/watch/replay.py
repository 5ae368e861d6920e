"""`clusterwatch watch replay`: the decision rules over recorded observations (JSON Lines).

A present node's line may carry what `condor_status -af Machine LastHeardFrom` said of it:
`last_heard`, its newest LastHeardFrom, and `newest_heard`, the collector's clock as the
poll read it (condor.collector_now: the newest LastHeardFrom of the answer not after `t`;
`t` when absent). Lines without them are decided exactly as before they existed.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator
from typing import IO, NamedTuple, Optional

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
from clusterwatch.watch.inventory import GPU_PREFIX, NODE_PREFIX

# The words a line may give as its observation, and what each is read as.
NODE_WORDS = {obs.value: obs
              for obs in (Observation.PRESENT, Observation.MISSING, Observation.UNKNOWN)}
GPU_WORDS = {"missing": Observation.MISSING, "unknown": Observation.UNKNOWN,
             "invalid": Observation.UNKNOWN}
KEYS = {"t", "target", "observation"}
HEARD_KEYS = {"last_heard", "newest_heard"}  # a present node's, optional


class ReplayError(ValueError):
    """A line that is not an observation; the message starts with its line number."""


class Line(NamedTuple):
    """One observation line, parsed.

    `observation` None: a GPU mtime in `mtime`, to be classified against the thresholds in
    use ("invalid" comes back as unknown). `last_heard`: a present node's LastHeardFrom,
    with `newest_heard` (the poll time when the line gives none).
    """

    t: float
    target: str
    observation: Optional[Observation]
    mtime: Optional[float] = None
    last_heard: Optional[float] = None
    newest_heard: Optional[float] = None


def parse_line(number: int, line: str) -> Line:
    try:
        item = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ReplayError(f"line {number}: not JSON ({exc.msg})") from None
    if not isinstance(item, dict) or not KEYS <= set(item) <= KEYS | HEARD_KEYS:
        raise ReplayError(f"line {number}: expected an object with t, target, observation "
                          f"(and for a present node, optionally last_heard, newest_heard)")
    t, target, observation = item["t"], item["target"], item["observation"]
    if not _is_time(t):
        raise ReplayError(f"line {number}: t must be a finite number of epoch seconds")
    if not isinstance(target, str):
        raise ReplayError(f"line {number}: target must be a string")
    if target.startswith(NODE_PREFIX) and len(target) > len(NODE_PREFIX):
        if not isinstance(observation, str) or observation not in NODE_WORDS:
            raise ReplayError(f"line {number}: a node observation is one of "
                              f"{', '.join(NODE_WORDS)}")
        if not HEARD_KEYS & set(item):
            return Line(float(t), target, NODE_WORDS[observation])
        return _heard_line(number, item, float(t), target, observation)
    if set(item) != KEYS:
        raise ReplayError(f"line {number}: last_heard and newest_heard are a node's")
    if target.startswith(GPU_PREFIX) and len(target) > len(GPU_PREFIX):
        if isinstance(observation, (int, float)) and not isinstance(observation, bool):
            if not _finite(observation):
                # not a finite number: unknown
                return Line(float(t), target, Observation.UNKNOWN)
            return Line(float(t), target, None, float(observation))
        if isinstance(observation, str) and observation in GPU_WORDS:
            return Line(float(t), target, GPU_WORDS[observation])
        raise ReplayError(f"line {number}: a GPU observation is an mtime or one of "
                          f"{', '.join(GPU_WORDS)}")
    raise ReplayError(f"line {number}: target must start with node: or gpu: and name one")


def _heard_line(number: int, item: dict[str, object], t: float, target: str,
                observation: str) -> Line:
    last_heard, newest_heard = item.get("last_heard"), item.get("newest_heard", t)
    if observation != Observation.PRESENT.value or "last_heard" not in item:
        raise ReplayError(f"line {number}: only a present node has last_heard (and "
                          f"newest_heard with it)")
    if not _is_time(last_heard) or not _is_time(newest_heard):
        raise ReplayError(f"line {number}: last_heard and newest_heard must be finite "
                          f"numbers of epoch seconds")
    assert isinstance(last_heard, (int, float)) and isinstance(newest_heard, (int, float))
    return Line(t, target, Observation.PRESENT, None, float(last_heard), float(newest_heard))


def _is_time(value: object) -> bool:
    return (not isinstance(value, bool) and isinstance(value, (int, float))
            and _finite(value))


def _finite(number: float) -> bool:
    """JSON integers can exceed a float; such a number is no usable time."""
    try:
        return math.isfinite(float(number))
    except OverflowError:
        return False


def replay(
    lines: Iterable[str], thresholds: Thresholds = DEFAULT_THRESHOLDS
) -> Iterator[Decision]:
    """Decisions, in order, for observations given in time order; records start empty."""
    records: dict[str, TargetRecord] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        t, target, observation, mtime, last_heard, newest_heard = parse_line(number, line)
        heard_at = None
        if observation is None:
            assert mtime is not None
            observation = classify_mtime(t, mtime, thresholds)
        elif last_heard is not None:
            assert newest_heard is not None
            observation, heard_at = classify_heard(t, last_heard, newest_heard, thresholds)
        record = records.setdefault(target, TargetRecord())
        decision = decide(record, target, t, observation, mtime, thresholds, heard_at)
        if decision is not None:
            yield decision


def write_decisions(decisions: Iterable[Decision], out: IO[str]) -> int:
    count = 0
    for decision in decisions:
        out.write(json.dumps({"t": decision.t, "target": decision.target,
                              "action": decision.action.value,
                              "status": decision.status.value}) + "\n")
        out.flush()
        count += 1
    return count
