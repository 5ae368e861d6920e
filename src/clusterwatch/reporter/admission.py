"""The record's `admission` section: how the workers that ended in the last hour ended, per
queue, with their evidence (pure: the workers and their evidence are parameters).

Classes, kept apart:
- `refusal`: exit code in the site's refusal set (default 73, the native OSG pilot's pre-job
  refusal). Never labelled with the pilot's generic meaning of 73 ("Software directory does
  not exist"): the harvester's errorCode 9000 text is not repeated either.
- `cancelled`: a recorded SIGTERM stop, that is status `cancelled` or a condor end by
  signal 15.
- `error`: any other failed, missed or non-zero end with a known exit code or signal.
- `finished`: status finished with exit 0 (or none recorded).
- `unclassified`: failed or missed with neither an exit code nor a signal known, from the
  database or the event log (a missing log stays unclassified).
Python 3.6, standard library only.
"""

import calendar
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

WINDOW_S = 3600
DEFAULT_REFUSAL_EXIT_CODES = (73,)
SIGTERM = 15
CLASSES = ("refusal", "cancelled", "error", "finished", "unclassified")
MAX_GROUPS = 50  # per queue, the largest first
EXAMPLES = 3


def _exit_code(worker: Dict[str, Any], evidence: Dict[str, Any]) -> Optional[int]:
    code = worker.get("nativeExitCode")
    if isinstance(code, int) and not isinstance(code, bool):
        return code
    code = evidence.get("return_value")
    return code if isinstance(code, int) else None


def classify(worker: Dict[str, Any], evidence: Dict[str, Any],
             refusal_codes: Sequence[int]) -> str:
    status = worker.get("status")
    signal = evidence.get("signal")
    if status == "cancelled" or signal == SIGTERM:
        return "cancelled"
    code = _exit_code(worker, evidence)
    if code is not None and code in refusal_codes:
        return "refusal"
    if status == "finished" and not code and signal is None:
        return "finished"
    if code is None and signal is None:
        return "finished" if status == "finished" else "unclassified"
    return "error"


def _seconds(utc: Any) -> Optional[int]:
    if not isinstance(utc, str):
        return None
    try:
        return calendar.timegm(time.strptime(utc, "%Y-%m-%dT%H:%M:%SZ"))
    except ValueError:
        return None


def wall_seconds(worker: Dict[str, Any]) -> Optional[int]:
    """endTime - startTime as the harvester recorded them: includes the worker's startup and
    the harvester's polling and reporting delay, so it is not the slot's busy time."""
    start, end = _seconds(worker.get("startTime")), _seconds(worker.get("endTime"))
    if start is None or end is None or end < start:
        return None
    return end - start


def _times() -> Dict[str, Any]:
    return {"recorded_wall_s": 0, "recorded_wall_workers": 0, "slot_busy_s": 0,
            "slot_busy_workers": 0, "execute_s": 0, "execute_workers": 0}


def _add_times(totals: Dict[str, Any], worker: Dict[str, Any],
               evidence: Dict[str, Any]) -> None:
    # Sums only over the workers that have the value; the *_workers counts say how many.
    for key, value in (("recorded_wall", wall_seconds(worker)),
                       ("slot_busy", evidence.get("slot_busy_s")),
                       ("execute", evidence.get("execute_s"))):
        if isinstance(value, int):
            totals[key + "_s"] += value
            totals[key + "_workers"] += 1


def _empty_queue() -> Dict[str, Any]:
    out = {name: {"count": 0, "exit_codes": {}, "times": _times()}
           for name in CLASSES}  # type: Dict[str, Any]
    out["refusal"]["groups"] = []
    out["ended"] = 0
    out["coverage"] = {"with_evidence": 0, "without_evidence": 0, "missing_reasons": {},
                       "not_available": {}}
    return out


def _example(worker: Dict[str, Any], evidence: Dict[str, Any]) -> Dict[str, Any]:
    return {"worker": worker.get("workerID"), "execution_host": evidence.get("execution_host"),
            "execution_queue": evidence.get("execution_queue"),
            "remaining_lifetime_s": evidence.get("remaining_lifetime_s")}


def _group_refusals(refusals: List[Tuple[Dict[str, Any], Dict[str, Any]]]
                    ) -> List[Dict[str, Any]]:
    """Refusals by (slot, admission floor): the same slot refused for the same required
    lifetime again and again is one line, not many."""
    groups = {}  # type: Dict[Tuple[str, str], Dict[str, Any]]
    for worker, evidence in refusals:
        slot, floor = evidence.get("slot_name"), evidence.get("required_lifetime_s")
        group = groups.setdefault((str(slot), str(floor)), {
            "slot_name": slot, "required_lifetime_s": floor, "count": 0,
            "remaining_lifetime_s_min": None, "remaining_lifetime_s_max": None,
            "examples": []})
        group["count"] += 1
        remaining = evidence.get("remaining_lifetime_s")
        if isinstance(remaining, int):
            low, high = group["remaining_lifetime_s_min"], group["remaining_lifetime_s_max"]
            group["remaining_lifetime_s_min"] = remaining if low is None else min(low, remaining)
            group["remaining_lifetime_s_max"] = remaining if high is None else max(high, remaining)
        if len(group["examples"]) < EXAMPLES:
            group["examples"].append(_example(worker, evidence))
    ordered = sorted(groups.values(), key=lambda g: (-g["count"], str(g["slot_name"]),
                                                     str(g["required_lifetime_s"])))
    for group in ordered:
        group["repeated"] = group["count"] > 1
    return ordered[:MAX_GROUPS]


def _has_evidence(evidence: Optional[Dict[str, Any]]) -> bool:
    """At least one of the worker's two files (event log, launcher stderr) was read."""
    return evidence is not None and bool(evidence) and len(evidence.get("errors") or []) < 2


def queues_section(workers: List[Dict[str, Any]], evidence: Dict[str, Dict[str, Any]],
                   refusal_codes: Sequence[int],
                   why_missing: Dict[str, str]) -> Dict[str, Any]:
    """Per queue (computingSite): counts per class, exit codes, times, refusal groups and
    evidence coverage. `why_missing` says, per worker ID without evidence, why not."""
    queues = {}  # type: Dict[str, Dict[str, Any]]
    refusals = {}  # type: Dict[str, List[Tuple[Dict[str, Any], Dict[str, Any]]]]
    for worker in workers:
        key = str(worker.get("workerID"))
        found = evidence.get(key) or {}
        site = str(worker.get("computingSite"))
        queue = queues.setdefault(site, _empty_queue())
        kind = classify(worker, found, refusal_codes)
        entry = queue[kind]
        entry["count"] += 1
        queue["ended"] += 1
        code = _exit_code(worker, found)
        label = "signal {}".format(found["signal"]) if found.get("signal") is not None else (
            str(code) if code is not None else "unknown")
        entry["exit_codes"][label] = entry["exit_codes"].get(label, 0) + 1
        _add_times(entry["times"], worker, found)
        coverage = queue["coverage"]
        if _has_evidence(found):
            coverage["with_evidence"] += 1
        else:
            coverage["without_evidence"] += 1
            reason = why_missing.get(key) or "; ".join(found.get("errors") or []) or \
                "no evidence in the worker's files"
            coverage["missing_reasons"][reason] = coverage["missing_reasons"].get(reason, 0) + 1
        for field, reason in sorted((found.get("missing") or {}).items()):
            counts = coverage["not_available"].setdefault(field, {})
            counts[reason] = counts.get(reason, 0) + 1
        if kind == "refusal":
            refusals.setdefault(site, []).append((worker, found))
    for site, found_refusals in refusals.items():
        queues[site]["refusal"]["groups"] = _group_refusals(found_refusals)
    return queues
