"""The reporter's state directory: one JSON state file, a lock, private modes.

Each part owns a sub-object of the state (log positions, the adjuster's last values, cached
worker reasons); the file is replaced atomically so a killed run leaves the previous state.
"""

import contextlib
import errno
import fcntl
import json
import os
import tempfile
import time
from typing import Any, Dict, Iterator, Optional

STATE_FILE = "state.json"
LOCK_FILE = "lock"


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


def load(state_dir: str) -> Dict[str, Any]:
    """The previous run's state; {} on the first run or when the file is unreadable."""
    try:
        with open(os.path.join(state_dir, STATE_FILE), "rb") as handle:
            data = json.loads(handle.read().decode("utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


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
