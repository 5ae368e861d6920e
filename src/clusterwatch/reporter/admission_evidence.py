"""One ended worker's admission evidence: slot identity and measured busy/execution seconds
from its condor event log, and what its launcher said on stderr.

The event log is read with `condor_events` (one parser). `SlotName` (execute event, HTCondor
10.5 and later) and the terminated event's `TimeSlotBusy`/`TimeExecute` rows (23.2 and
later) are absent from older logs and from grid-universe logs (the gridmanager writes the
CE, not a slot): such a value is None with the reason, never 0, so a sum never counts a
missing measurement as no time. Python 3.6, standard library only.
"""

import re
from typing import Any, Dict, List, Optional, Sequence

from clusterwatch.reporter import condor_events, launcher_stderr

_SLOT_NAME = re.compile(r"^SlotName:\s*(\S+)\s*$")
_TIME_ROW = re.compile(r"^(TimeSlotBusy|TimeExecute) \(s\)\s*:\s*(\d+)")
_SIGNAL = re.compile(r"Abnormal termination \(signal (\d+)\)")
_RETURN = re.compile(r"Normal termination \(return value (-?\d+)\)")
# `Job executing on host: <addr>` in a local pool; the gridmanager writes the grid resource
# (`condor ce.host ce.host:9619`, `arc ...`, `batch ...`) instead of a sinful string.
_GRID_HOST = re.compile(r"^Job executing on host: (?!<)\S+ ")

NO_SLOT_GRID = "grid universe: the gridmanager's execute event names the CE, not a slot"
NO_SLOT_OLD = "the execute event has no SlotName (HTCondor before 10.5)"
NO_TIMES_GRID = "grid universe: the terminated event has no TimeSlotBusy/TimeExecute rows"
NO_TIMES_OLD = "the terminated event has no TimeSlotBusy/TimeExecute rows (HTCondor before 23.2)"
NO_EXECUTE = "no execute event in the event log"
NO_TERMINATED = "no terminated event in the event log"


def _last(events: List[Dict[str, Any]], code: int) -> Optional[Dict[str, Any]]:
    found = [event for event in events if event["code"] == code]
    return found[-1] if found else None


def slot_evidence(events: List[Dict[str, Any]]) -> Dict[str, Any]:
    """Slot, busy and execution seconds, the end (return value or signal) and the universe
    as far as the events tell; each value missing is None with its reason in `missing`."""
    execute = _last(events, condor_events.EXECUTE)
    terminated = _last(events, condor_events.TERMINATED)
    grid = execute is not None and _GRID_HOST.match(execute["text"]) is not None
    out = {"slot_name": None, "slot_busy_s": None, "execute_s": None,
           "return_value": None, "signal": None,
           "universe": None if execute is None else ("grid" if grid else "vanilla")
           }  # type: Dict[str, Any]
    missing = {}  # type: Dict[str, str]
    if execute is None:
        missing["slot_name"] = NO_EXECUTE
    else:
        for line in execute["details"]:
            found = _SLOT_NAME.match(line)
            if found is not None:
                out["slot_name"] = found.group(1)
        if out["slot_name"] is None:
            missing["slot_name"] = NO_SLOT_GRID if grid else NO_SLOT_OLD
    if terminated is None:
        missing["slot_busy_s"] = missing["execute_s"] = NO_TERMINATED
    else:
        rows = {"TimeSlotBusy": "slot_busy_s", "TimeExecute": "execute_s"}
        for line in terminated["details"]:
            row = _TIME_ROW.match(line)
            if row is not None:
                out[rows[row.group(1)]] = int(row.group(2))
            ended = _RETURN.search(line) or _SIGNAL.search(line)
            if ended is not None and out["return_value"] is None and out["signal"] is None:
                out["return_value" if ended.re is _RETURN else "signal"] = int(ended.group(1))
        for key in ("slot_busy_s", "execute_s"):
            if out[key] is None:
                missing[key] = NO_TIMES_GRID if grid else NO_TIMES_OLD
    out["missing"] = missing
    return out


def event_log_evidence(path: Optional[str],
                       max_bytes: int = condor_events.DEFAULT_MAX_BYTES) -> Dict[str, Any]:
    """`slot_evidence` of the event log at `path`, or every value None with why."""
    if path is None:
        problem = "no local path for the worker's batchLog URL"
    else:
        try:
            return slot_evidence(condor_events.read_events(path, max_bytes))
        except (OSError, ValueError) as exc:  # ValueError: a path with a NUL character
            problem = "cannot read the condor event log: {}: {}".format(
                type(exc).__name__, getattr(exc, "strerror", None) or exc or "unknown error")
    keys = ("slot_name", "slot_busy_s", "execute_s")
    out = {key: None for key in keys}  # type: Dict[str, Any]
    out.update({"return_value": None, "signal": None, "universe": None, "error": problem,
                "missing": {key: problem for key in keys}})
    return out


def worker_evidence(event_log: Optional[str], stderr: Optional[str],
                    startup: Sequence["re.Pattern[str]"],
                    lifetime: Sequence["re.Pattern[str]"]) -> Dict[str, Any]:
    """Both files' evidence for one worker; `complete` is False when a file it has a path
    for could not be read (it may still appear: the worker is read again on a later run);
    a worker without a path has nothing to wait for."""
    slot = event_log_evidence(event_log)
    launcher = launcher_stderr.stderr_evidence(stderr, startup, lifetime)
    complete = not ((event_log is not None and "error" in slot)
                    or (stderr is not None and "error" in launcher))
    missing = dict(slot.pop("missing"))
    missing.update(launcher.pop("missing"))
    errors = [part.pop("error") for part in (slot, launcher) if "error" in part]
    out = dict(slot)
    out.update(launcher)
    out["missing"] = missing
    out["errors"] = errors
    out["complete"] = complete
    return out
