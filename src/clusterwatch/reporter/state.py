"""The reporter's state directory: one JSON state file, a lock, private modes.

Each part owns a sub-object of the state (log positions, the adjuster's last values, cached
worker reasons, the record a run committed with them: see commit.py); the file is replaced
atomically so a killed run leaves the previous state. A state file damaged all the same is
reported, kept aside and recovered from as far as it parses (see state_repair.py).
"""

import contextlib
import errno
import fcntl
import json
import os
import tempfile
import time
from typing import Any, Dict, Iterator, Optional, Tuple

from clusterwatch.reporter import state_repair
from clusterwatch.reporter.regular_read import open_regular

STATE_FILE = "state.json"
LOCK_FILE = "lock"
COUNTS_FILE = "delivery.json"  # the delivery buffer's counts (see buffer.py)


class StateError(Exception):
    pass


def prepare(state_dir: str) -> None:
    os.makedirs(state_dir, mode=0o700, exist_ok=True)
    os.chmod(state_dir, 0o700)


@contextlib.contextmanager
def locked(state_dir: str, timeout: float = 240.0) -> Iterator[None]:
    """Serialise runs sharing a state dir; a cron run that overlaps the next one waits."""
    fd = os.open(os.path.join(state_dir, LOCK_FILE), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES):
                    raise
                if time.monotonic() >= deadline:
                    raise StateError("another reporter run holds the lock in {}".format(
                        state_dir)) from None
                time.sleep(0.2)
        yield
    finally:
        os.close(fd)


def load(state_dir: str, keep_damaged: bool = True
         ) -> Tuple[Dict[str, Any], Optional[Dict[str, Any]]]:
    """(the previous run's state, the damage found in it or None).

    A first run has no state file: ({}, None). A state file that is missing from a directory
    used before, unreadable, empty, not JSON, or with parts of the wrong shape gives what
    could be recovered from it and a report for the record's `state` field: `error` (what
    is wrong), `kept_as` (the copy kept aside beside it, with `keep_damaged`; None when
    there was nothing to keep or it could not be kept) and `recovered` (what was used).
    """
    path = os.path.join(state_dir, STATE_FILE)
    try:
        with open_regular(path) as handle:  # a FIFO in its place must not hang the run
            raw = handle.read()
    except FileNotFoundError:
        if not _used_before(state_dir):
            return {}, None
        return {}, _damage(path, "missing from a state directory used before", {}, False)
    except OSError as exc:
        problem = "unreadable ({})".format(exc.strerror or type(exc).__name__)
        return {}, _damage(path, problem, {}, keep_damaged)
    if not raw.strip():
        return {}, _damage(path, "empty", {}, keep_damaged)
    text = raw.decode("utf-8", "replace")
    try:
        parsed = json.loads(text)
    except ValueError as exc:
        recovered = state_repair.salvage(text)
        return recovered, _damage(path, "not JSON ({})".format(exc), recovered,
                                  keep_damaged)
    state, dropped = state_repair.usable_parts(parsed)
    if not dropped:
        return state, None
    problem = "parts of the wrong shape dropped: {}".format(", ".join(dropped))
    return state, _damage(path, problem, state, keep_damaged)


def _used_before(state_dir: str) -> bool:
    # A state directory that delivered or buffered a record, or kept a damaged state, had a
    # state file: its absence now is a loss, not a first run.
    names = os.listdir(state_dir) if os.path.isdir(state_dir) else []
    return COUNTS_FILE in names or any(
        name.startswith(STATE_FILE + state_repair.DAMAGED_INFIX) for name in names)


def _damage(path: str, problem: str, recovered: Dict[str, Any],
            keep: bool) -> Dict[str, Any]:
    return {
        "error": "state file {} is damaged: {}".format(path, problem),
        "kept_as": state_repair.keep_aside(path) if keep else None,
        "recovered": state_repair.recovered(recovered),
    }


def describe_damage(damage: Dict[str, Any]) -> str:
    """One line for stderr: what is wrong, where the file was kept, what it cost."""
    kept = damage.get("kept_as")
    recovered = damage.get("recovered") or []
    return "{}; {}; recovered: {}; a log without a recovered position starts again from its " \
        "end (what it logged since the last run is not counted)".format(
            damage["error"], "kept as " + kept if kept else "nothing kept aside",
            ", ".join(recovered) if recovered else "nothing")


def save(state_dir: str, state: Dict[str, Any]) -> None:
    write_atomically(os.path.join(state_dir, STATE_FILE),
                     json.dumps(state, sort_keys=True).encode("utf-8"))


def write_atomically(path: str, data: bytes, durable: bool = True,
                     temp_prefix: Optional[str] = None) -> None:
    """Write through a temp file in the same directory, fsync, rename (then fsync the
    directory): readers see the old file or the whole new one, and a run killed mid-write
    leaves only a temp file. `temp_prefix` names temp files so a directory scan can skip
    them (the delivery buffer does)."""
    directory = os.path.dirname(path) or "."
    prefix = temp_prefix if temp_prefix is not None else "." + os.path.basename(path) + "."
    fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if durable:
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
