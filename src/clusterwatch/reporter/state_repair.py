"""What can be saved from a damaged state file, and where the damaged file is kept.

The state file is replaced atomically, yet a disk fault, a full or flaky NFS home, a hand
edit or a restore can still leave it garbled, cut short, empty or unreadable. Such a file was
once taken silently for a first run: every log position was lost, and the interval's lines
with it. `state.load` now says so and keeps the file aside for an operator; this module
recovers what it can: from a state that parses, each part whose shape is right (and each log
position that is one); from a file that does not parse, the last run's time, every log
position and each other part that still parse on their own.

Python 3.6 compatible, standard library only (see the package docstring).
"""

import json
import os
import re
import shutil
import stat
import time
from typing import Any, Dict, List, Optional, Tuple

from clusterwatch.reporter.log_position import is_position

# The state's parts and the types they must have; a part of another type is dropped.
PART_TYPES = {
    "logs": (dict,), "adjustment": (dict,), "reasons": (dict,), "last_run": (int, float),
    "pending": (dict,), "fetching": (dict,),
}  # type: Dict[str, Tuple[type, ...]]
DAMAGED_INFIX = ".damaged-"
KEEP_DAMAGED = 5  # copies kept aside, newest first

_NUMBER = r"(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)"
_LAST_RUN = re.compile(r'"last_run"\s*:\s*' + _NUMBER)
_LOGS = re.compile(r'"logs"\s*:\s*\{')
_ENTRY = re.compile(r'"((?:[^"\\]|\\.)*)"\s*:\s*\{')
_AFTER_LOGS = re.compile(r'"reasons"\s*:\s*\{')
_PENDING = re.compile(r'"pending"\s*:\s*(?=\{)')


def usable_parts(state: Any) -> Tuple[Dict[str, Any], List[str]]:
    """(the parts of a parsed state that can be used, the names of those dropped)."""
    if not isinstance(state, dict):
        return {}, ["the whole state (a JSON {}, not an object)".format(
            type(state).__name__)]
    usable = {}  # type: Dict[str, Any]
    dropped = []  # type: List[str]
    for key, value in state.items():
        kind = PART_TYPES.get(key)
        if kind is not None and (not isinstance(value, kind) or isinstance(value, bool)):
            dropped.append(key)
        else:
            usable[key] = value
    logs = usable.get("logs")
    if isinstance(logs, dict):
        usable["logs"] = {name: saved for name, saved in logs.items() if is_position(saved)}
        dropped.extend("logs/" + name for name in sorted(logs) if name not in usable["logs"])
    return usable, dropped


def salvage(text: str) -> Dict[str, Any]:
    """A state rebuilt from the pieces of a state file's `text` that still parse alone."""
    decoder = json.JSONDecoder()
    state = {}  # type: Dict[str, Any]
    pending = _PENDING.search(text)
    if pending is not None:
        try:
            state["pending"], end = decoder.raw_decode(text, pending.end())
        except ValueError:
            end = len(text)  # cut short inside the record: what follows it is gone too
        # The pending record has keys of its own (`reasons`, ...): look for the other
        # parts outside it only.
        text = text[:pending.start()] + " " * (end - pending.start()) + text[end:]
    found = _LAST_RUN.search(text)
    if found is not None:
        state["last_run"] = json.loads(found.group(1))
    for part in ("adjustment", "fetching", "reasons"):
        found = re.search(r'"{}"\s*:\s*(?=\{{)'.format(part), text)
        if found is not None:
            try:
                state[part] = decoder.raw_decode(text, found.end())[0]
            except ValueError:
                continue  # cut short or garbled inside: this part is lost
    logs = _LOGS.search(text)
    if logs is not None:
        state["logs"] = _salvage_positions(text, logs.end(), decoder)
    return usable_parts(state)[0]


def _salvage_positions(text: str, start: int, decoder: json.JSONDecoder) -> Dict[str, Any]:
    """Each `"name": {position}` from `start` on that still parses, up to the next part."""
    after = _AFTER_LOGS.search(text, start)
    end = after.start() if after is not None else len(text)
    positions = {}  # type: Dict[str, Any]
    at = start
    while True:
        entry = _ENTRY.search(text, at, end)
        if entry is None:
            return positions
        try:
            name = json.loads('"' + entry.group(1) + '"')
            saved, at = decoder.raw_decode(text, entry.end() - 1)
        except ValueError:
            at = entry.end()  # garbled here: look for the next entry
            continue
        if isinstance(saved, dict) and saved and is_position(saved):
            positions[name] = saved


def recovered(state: Dict[str, Any]) -> List[str]:
    """Names of what a recovered state holds, for the record and the operator."""
    names = [key for key in sorted(state) if key != "logs"]
    names.extend("logs/" + name for name in sorted(state.get("logs") or {}))
    return names


def keep_aside(path: str) -> Optional[str]:
    """Keep the damaged file at `path` as `<name>.damaged-<UTC time>` beside it (a hard link:
    the file stays where it is until the run replaces it, so a run that dies first leaves
    the damage for the next one to see). Returns the copy's name, or None when there was
    nothing to keep or it could not be kept."""
    directory, base = os.path.split(path)
    try:
        st = os.lstat(path)
        names = sorted(name for name in os.listdir(directory)
                       if name.startswith(base + DAMAGED_INFIX))
    except OSError:
        return None
    for name in names:
        try:
            if os.path.samestat(os.lstat(os.path.join(directory, name)), st):
                return name  # kept already by a run that did not get to replace it
        except OSError:
            continue
    now = time.time()
    name = base + DAMAGED_INFIX + time.strftime("%Y%m%dT%H%M%S", time.gmtime(now)) + (
        ".{:06d}Z".format(int(now % 1 * 1e6)))
    target = os.path.join(directory, name)
    try:
        if not stat.S_ISREG(st.st_mode):
            os.rename(path, target)  # not a file (a directory): it has to go for a new state
        else:
            try:
                os.link(path, target)
            except OSError:  # a filesystem without hard links
                shutil.copy2(path, target)
    except OSError:
        return None
    _trim(directory, sorted([*names, name]))
    return name


def _trim(directory: str, names: List[str]) -> None:
    for name in names[:max(0, len(names) - KEEP_DAMAGED)]:
        path = os.path.join(directory, name)
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            else:
                os.unlink(path)
        except OSError:
            continue
