"""`clusterwatch watch replay`: the decision rules over recorded observations (JSON Lines)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator
from typing import IO, Optional

from clusterwatch.watch.decisions import (
    DEFAULT_THRESHOLDS,
    Decision,
    Observation,
    TargetRecord,
    Thresholds,
    classify_mtime,
    decide,
)
from clusterwatch.watch.inventory import GPU_PREFIX, NODE_PREFIX

# The words a line may give as its observation, and what each is read as.
NODE_WORDS = {obs.value: obs
              for obs in (Observation.PRESENT, Observation.MISSING, Observation.UNKNOWN)}
GPU_WORDS = {"missing": Observation.MISSING, "unknown": Observation.UNKNOWN,
             "invalid": Observation.UNKNOWN}


class ReplayError(ValueError):
    """A line that is not an observation; the message starts with its line number."""


def parse_line(number: int, line: str) -> tuple[float, str, Optional[Observation],
                                                Optional[float]]:
    """(t, target, observation, mtime) for one JSON line.

    A GPU mtime comes back as observation None with the number, to be classified against
    the thresholds in use; "invalid" comes back as unknown.
    """
    try:
        item = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ReplayError(f"line {number}: not JSON ({exc.msg})") from None
    if not isinstance(item, dict) or set(item) != {"t", "target", "observation"}:
        raise ReplayError(f"line {number}: expected an object with t, target, observation")
    t, target, observation = item["t"], item["target"], item["observation"]
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not _finite(t):
        raise ReplayError(f"line {number}: t must be a finite number of epoch seconds")
    if not isinstance(target, str):
        raise ReplayError(f"line {number}: target must be a string")
    if target.startswith(NODE_PREFIX) and len(target) > len(NODE_PREFIX):
        if not isinstance(observation, str) or observation not in NODE_WORDS:
            raise ReplayError(f"line {number}: a node observation is one of "
                              f"{', '.join(NODE_WORDS)}")
        return float(t), target, NODE_WORDS[observation], None
    if target.startswith(GPU_PREFIX) and len(target) > len(GPU_PREFIX):
        if isinstance(observation, (int, float)) and not isinstance(observation, bool):
            if not _finite(observation):
                # not a finite number: unknown
                return float(t), target, Observation.UNKNOWN, None
            return float(t), target, None, float(observation)
        if isinstance(observation, str) and observation in GPU_WORDS:
            return float(t), target, GPU_WORDS[observation], None
        raise ReplayError(f"line {number}: a GPU observation is an mtime or one of "
                          f"{', '.join(GPU_WORDS)}")
    raise ReplayError(f"line {number}: target must start with node: or gpu: and name one")


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
        t, target, observation, mtime = parse_line(number, line)
        if observation is None:
            assert mtime is not None
            observation = classify_mtime(t, mtime, thresholds)
        record = records.setdefault(target, TargetRecord())
        decision = decide(record, target, t, observation, mtime, thresholds)
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
