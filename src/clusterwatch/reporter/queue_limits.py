"""A queue's worker limits sanitised as the harvester does, and the limit in force.

Facts from HSF/harvester at d561b72f (package 0.7.5): `QueueConfigMapper.load_data` in
`harvestercore/queue_config_mapper.py` sanitises the limits of the merged queue, and
`get_worker_limits` in `harvestercore/db_proxy.py` (the form since v0.5.10) turns them into
the queued-worker limit the worker adjuster applies. In the mapper's order:

1. a NoJob (pull) queue has no job limits: every `nQueueLimitJob*` becomes None; any other
   queue has no worker ratio: `nQueueLimitWorkerRatio` and `nQueueLimitWorkerMin` become None;
2. a limit that is not an `int` becomes None, a negative one 0 (a JSON boolean *is* an int
   to Python, so the harvester keeps true as 1 and false as 0);
3. `maxWorkers` defaults to 0, and `nQueueLimitWorker` is clipped by `nQueueLimitWorkerMax`
   and `maxWorkers` (or taken from the maximum when only that is set); the minimums are
   clipped by what they are the minimum of.

The limit in force needs the queue's running workers when a ratio applies, so it is a pure
function of the sanitised limits and that count. The per-resource-type limit that
`get_worker_limits` also computes is not derived: the adjuster ignores it.

Python 3.6 compatible, standard library only (see the package docstring).
"""

import json
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Tuple

WORKER_LIMITS = ("maxWorkers", "nQueueLimitWorker", "nQueueLimitWorkerMax",
                 "nQueueLimitWorkerRatio", "nQueueLimitWorkerMin", "maxNewWorkersPerCycle")
JOB_LIMITS = ("nQueueLimitJob", "nQueueLimitJobMax", "nQueueLimitJobRatio", "nQueueLimitJobMin",
              "nQueueLimitJobCores", "nQueueLimitJobCoresRatio", "nQueueLimitJobCoresMin")
OTHER_LIMITS = ("nQueueLimitWorkerCores", "nQueueLimitWorkerCoresRatio",
                "nQueueLimitWorkerCoresMin", "nQueueLimitWorkerMemory",
                "nQueueLimitWorkerMemoryRatio", "nQueueLimitWorkerMemoryMin")
LIMITS = WORKER_LIMITS + JOB_LIMITS + OTHER_LIMITS  # the mapper's queue_limit_attrs
PULL_ONLY = ("nQueueLimitWorkerRatio", "nQueueLimitWorkerMin")

Limits = Dict[str, Optional[int]]


class SanitisedLimits(NamedTuple):
    """`values`: every limit after sanitising (None: unset); `steps`: how nQueueLimitWorker
    (or maxWorkers in its place) came to be; `notes`: what sanitising changed or ignored."""

    values: Limits
    steps: Tuple[str, ...]
    notes: Tuple[str, ...]


class LimitInForce(NamedTuple):
    """The queued-worker limit `get_worker_limits` gives the adjuster. `value` is None when a
    ratio applies and the running workers were not counted; `at_most` is known regardless."""

    value: Optional[int]
    at_most: int
    running_workers: Optional[int]
    derivation: str

    def to_record(self) -> Dict[str, Any]:
        return {"value": self.value, "at_most": self.at_most,
                "running_workers": self.running_workers, "derivation": self.derivation}


def shown(value: Any) -> str:
    """A configuration value as a message quotes it: its JSON text, cut short."""
    try:
        text = json.dumps(value, sort_keys=True, default=repr)
    except ValueError:  # an integer past Python's digit limit (3.11): not worth quoting
        return "(a number too long to show)"
    return text if len(text) <= 40 else text[:37] + "..."


def sanitise_limits(settings: Mapping[str, Any], pull_mode: bool, map_type: str) -> SanitisedLimits:
    """The limits of one merged queue (`settings`) as the harvester leaves them."""
    notes = []  # type: List[str]
    steps = []  # type: List[str]
    raw = {name: settings.get(name) for name in LIMITS}
    for name in (JOB_LIMITS if pull_mode else PULL_ONLY):
        if raw[name] is not None:
            notes.append(f"{name} {shown(raw[name])} not used: " + (
                "a NoJob (pull) queue has no job limits" if pull_mode else
                f"the worker ratio and minimum apply only to NoJob (pull) queues, "
                f"this one is {map_type}"))
            if name == "nQueueLimitWorkerRatio":
                steps.append(f"{name} {shown(raw[name])} not applied: {map_type} queue")
            raw[name] = None
    values = {name: _integer(name, raw[name], notes) for name in LIMITS}  # type: Limits
    steps.insert(0, _clip_worker_limit(values))
    _clip_minimum(values, "nQueueLimitWorkerCoresMin", "nQueueLimitWorkerCores")
    _clip_minimum(values, "nQueueLimitWorkerMemoryMin", "nQueueLimitWorkerMemory")
    job, job_max = values["nQueueLimitJob"], values["nQueueLimitJobMax"]
    if job_max is not None:
        job = job_max if job is None else min(job, job_max)
        values["nQueueLimitJob"] = job
        values["nQueueLimitJobMax"] = job
    _clip_minimum(values, "nQueueLimitJobMin", "nQueueLimitJob")
    _clip_minimum(values, "nQueueLimitJobCoresMin", "nQueueLimitJobCores")
    return SanitisedLimits(values, tuple(steps), tuple(notes))


def _integer(name: str, value: Any, notes: List[str]) -> Optional[int]:
    if value is None:
        return None
    if isinstance(value, bool):
        notes.append(f"{name} {shown(value)} is a boolean: harvester takes it as {int(value)}")
        return int(value)
    if not isinstance(value, int):
        notes.append(f"{name} {shown(value)} is not an integer: harvester ignores it")
        return None
    if value < 0:
        notes.append(f"{name} {shown(value)} is negative: harvester uses 0")
        return 0
    return value


def _clip_minimum(values: Limits, minimum: str, of: str) -> None:
    low, high = values[minimum], values[of]
    if low is not None and high is not None:
        values[minimum] = min(low, high)


def _clip_worker_limit(values: Limits) -> str:
    """Clip nQueueLimitWorker, its maximum and minimum in place; how, as text."""
    most = values["maxWorkers"]
    most_text = "maxWorkers {}".format(most if most is not None else "0 (the default)")
    if most is None:
        most = values["maxWorkers"] = 0
    limit, limit_max = values["nQueueLimitWorker"], values["nQueueLimitWorkerMax"]
    if limit is not None:
        step, current = f"nQueueLimitWorker {limit}", limit
        if limit_max is not None and limit_max < current:
            step, current = step + f", clipped by nQueueLimitWorkerMax {limit_max}", limit_max
    elif limit_max is not None:
        step, current = f"nQueueLimitWorkerMax {limit_max} (no nQueueLimitWorker)", limit_max
    else:
        return f"no nQueueLimitWorker: {most_text} -> {most}"
    if most < current:
        step, current = step + f", clipped by {most_text}", most
    values["nQueueLimitWorker"] = current
    if limit_max is not None:
        values["nQueueLimitWorkerMax"] = current
    minimum = values["nQueueLimitWorkerMin"]
    if minimum is not None:
        values["nQueueLimitWorkerMin"] = min(minimum, current)  # current <= maxWorkers
    return step + f" -> {current}"


def limit_in_force(limits: SanitisedLimits, running_workers: Optional[int]) -> LimitInForce:
    """The limit `get_worker_limits` computes, given the running workers it would count for
    the queue (its site's workers in status `running`; None when not counted)."""
    if running_workers is not None and (
            isinstance(running_workers, bool) or running_workers < 0):
        raise ValueError(f"running_workers must be a count, not {running_workers!r}")
    values = limits.values
    base = values["nQueueLimitWorker"]
    if base is None:
        base = values["maxWorkers"] or 0
    steps = list(limits.steps)
    ratio, minimum = values["nQueueLimitWorkerRatio"], values["nQueueLimitWorkerMin"]
    value = base  # type: Optional[int]
    if ratio is not None and running_workers is None:
        steps.append(f"nQueueLimitWorkerRatio {ratio}% of the running workers, not counted"
                     f" -> at most {base}")
        value = None
    elif ratio is not None and running_workers is not None:
        by_ratio = int(running_workers * ratio / 100)  # the harvester's own arithmetic
        step = f"nQueueLimitWorkerRatio {ratio}% of {running_workers} running = {by_ratio}"
        if minimum is not None and by_ratio < minimum:
            value = min(base, minimum)
            step += f", below nQueueLimitWorkerMin {minimum} -> min({base}, {minimum})"
        else:
            value = min(base, by_ratio)
            step += f" -> min({base}, {by_ratio})"
        steps.append(step + f" = {value}")
    derivation = "; ".join(steps)
    if value == 0:
        derivation += " (0: the adjuster's queued-worker check applies only above 0)"
    return LimitInForce(value, base, running_workers, derivation)
