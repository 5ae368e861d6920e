"""The watch's state file: the targets' records and the outbox, saved atomically each poll.

One JSON file, `state.json`, in a directory of mode 700; a lock file serialises overlapping
runs. It holds a record only for a target with something to remember (a pending window or
an open incident, poll.evaluate): a target seen well needs none. Records are stored as
short lists, not objects, which halve both the size and the time of the rare large file
(a pool in trouble, or a state the earlier program wrote with a record per target).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import itertools
import json
import logging
import os
import stat
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from clusterwatch.atomic_write import write_atomically
from clusterwatch.errors import RunError
from clusterwatch.notify.outbox import Outbox
from clusterwatch.notify.silences import Silence
from clusterwatch.regular_file import NotRegularFile, read_regular
from clusterwatch.watch.decisions import TargetRecord
from clusterwatch.watch.state_codec import Decoded, decode
from clusterwatch.watch.state_original import decode_original, is_original
from clusterwatch.watch.state_salvage import salvage

log = logging.getLogger(__name__)

STATE_FILE = "state.json"
LOCK_FILE = "lock"
FORMAT_VERSION = 1


class StateError(RunError):
    """The state cannot be read or written (the message names the file, never a secret)."""


@dataclass
class WatchState:
    records: dict[str, TargetRecord] = field(default_factory=dict)
    outbox: Outbox = field(default_factory=Outbox)
    last_poll: dict[str, Any] = field(default_factory=dict)  # summary for status and health
    silences: list[Silence] = field(default_factory=list)  # saved with the rest, atomically
    damage: Optional[str] = None  # set by a load that found the file damaged: what it did


def prepare_state_dir(state_dir: Path) -> None:
    """Create the directory mode 700 (it holds unsent messages that name workers), and
    tighten an existing one that others can read, as a seed user's `mkdir -p` leaves it."""
    try:
        state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        mode = stat.S_IMODE(state_dir.stat().st_mode)
        if mode & 0o077:
            os.chmod(state_dir, mode & 0o700)
            log.warning("state directory %s was mode %03o; made it %03o", state_dir, mode,
                        mode & 0o700)
    except OSError as exc:
        raise StateError(f"cannot create state directory {state_dir}: {exc.strerror}") from None
    if not os.access(state_dir, os.W_OK | os.X_OK):
        raise StateError(f"state directory {state_dir} is not writable")


@contextlib.contextmanager
def locked(state_dir: Path, timeout: float = 50.0) -> Iterator[None]:
    """Hold the state lock; wait up to `timeout` seconds for an overlapping run to finish."""
    prepare_state_dir(state_dir)
    lock_path = state_dir / LOCK_FILE
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC, 0o600)
    except OSError as exc:  # a directory, a symlink loop, no permission
        raise StateError(f"cannot open lock file {lock_path}: {exc.strerror}") from None
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES):
                    raise StateError(f"cannot lock {lock_path}: {exc.strerror}") from None
                if time.monotonic() >= deadline:
                    raise StateError(
                        f"another clusterwatch watch run holds {lock_path} "
                        f"for more than {timeout:g} s"
                    ) from None
                time.sleep(0.1)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def load(state_dir: Path, repair: bool = True, channel_names: Sequence[str] = ()) -> WatchState:
    """Read the state; an absent file is an empty state.

    A file of the original pool-watch script is read as that (state_original). A damaged
    file (not JSON, bad values, not a regular file) keeps what still reads (see
    state_codec and state_salvage). With `repair` (the poll and redeliver, under the lock),
    leftovers of a killed save are removed and a damaged file is moved aside, said loudly
    and recorded in `last_poll["state_damage"]`; `channel_names`, the configured channels,
    get back the messages whose queue positions were lost. Without it (read-only callers
    such as `status`), a damaged file raises StateError and nothing is changed.
    """
    path = state_dir / STATE_FILE
    for leftover in state_dir.glob(f".{STATE_FILE}.*.tmp") if repair else ():
        # A save killed before its rename; the state file itself is whole.
        with contextlib.suppress(OSError):
            leftover.unlink()
    reason: Optional[str]
    try:
        raw = read_regular(path)
    except NotRegularFile as exc:
        decoded, reason = Decoded(), str(exc)
    except OSError as exc:
        raise StateError(f"cannot read {path}: {exc.strerror}") from None
    else:
        if raw is None:
            return WatchState()
        decoded, reason = _decode(raw, channel_names)
    watch_state = WatchState(decoded.records, decoded.outbox, decoded.last_poll,
                             decoded.silences)
    if decoded.original and repair:
        # Not damage: the original script's file, read whole or in part; the caller's
        # next save writes it in this format.
        log.warning("%s was written by the original pool-watch script: read its %d "
                    "target(s) and %d undelivered line(s); the next save writes it in this "
                    "program's format", path, len(decoded.records),
                    len(decoded.outbox.events))
    if reason is None and not decoded.problems:
        return watch_state
    problems = ([reason] if reason else []) + decoded.problems
    said = "; ".join(problems[:5]) + (f"; {len(problems) - 5} more" if len(problems) > 5
                                      else "")
    incidents = sum(record.incident is not None for record in decoded.records.values())
    kept = f"{incidents} open incident(s) and {len(decoded.outbox.events)} queued message(s)"
    if not repair:
        raise StateError(f"state file {path} is damaged ({said}); the next poll moves it "
                         f"aside and keeps {kept}")
    aside = _move_aside(path)
    detail = f"state file {path} was damaged ({said}); moved it to {aside}; kept {kept}"
    log.error("%s", detail)
    watch_state.damage = detail
    watch_state.last_poll["state_damage"] = {"t": time.time(), "detail": detail,
                                             "copy": str(aside)}
    save(state_dir, watch_state)  # what was kept is safe before the caller goes on
    return watch_state


def _decode(raw: bytes, channel_names: Sequence[str]) -> tuple[Decoded, Optional[str]]:
    """The state's items, and why the file as a whole is damaged (None: it is not)."""
    reason: Optional[str] = None
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError):
        data, reason = None, "not valid JSON"
    if not isinstance(data, dict):
        reason = reason or "not a JSON object"
        data = salvage(raw)
    if is_original(data, salvaged=reason is not None):
        return decode_original(data, channel_names, time.time(),
                               salvaged=reason is not None), reason
    # A salvage that lost the version reads as this version; a clean file must say it.
    version = data.get("version", FORMAT_VERSION if reason else None)
    if version != FORMAT_VERSION:
        return Decoded(), f"unknown format version {version!r}"
    return decode(data, channel_names, salvaged=reason is not None), reason


def _linked(path: Path, aside: Path) -> bool:
    """Give the file a second name, `aside`: unlike a rename, the file stays where the next
    poll reads it until the caller's save replaces it, so a save that fails (a full disk)
    or a kill before it loses nothing. False where the filesystem has no hard links."""
    try:
        os.link(path, aside)
    except OSError as exc:
        if exc.errno in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EMLINK):
            return False
        raise
    return True


def _move_aside(path: Path) -> Path:
    """Keep the damaged file for the operator (it may hold more than could be read)."""
    stamp = int(time.time())
    for attempt in itertools.count():
        aside = path.with_name(f"{STATE_FILE}.corrupt-{stamp}" + (f".{attempt}" if attempt
                                                                 else ""))
        if not os.path.lexists(aside):
            break
    try:
        if not (stat.S_ISREG(os.lstat(path).st_mode) and _linked(path, aside)):
            # A FIFO or a directory holds no state, and a save cannot replace a directory.
            os.replace(path, aside)
    except OSError as exc:
        raise StateError(f"cannot move the damaged {path} aside: {exc.strerror}") from None
    return aside


def save(state_dir: Path, state: WatchState, records_json: Optional[bytes] = None) -> bytes:
    """Write the state durably; return the records' JSON encoding.

    A later save of the same state whose records have not changed since (only the outbox
    has) may pass that encoding back as `records_json`, which spares encoding 100,000 rows
    again. The file is written whole either way.
    """
    if records_json is None:
        records_json = _dumps(_records_to_rows(state.records))
    data = b"".join((
        b'{"version":', _dumps(FORMAT_VERSION),
        b',"targets":', records_json,
        b',"outbox":', _dumps(state.outbox.to_json()),
        b',"last_poll":', _dumps(state.last_poll),
        b',"silences":', _dumps([silence.to_json() for silence in state.silences]),
        b"}",
    ))
    try:
        write_atomically(state_dir / STATE_FILE, data, mode=0o600)
    except OSError as exc:
        raise StateError(f"cannot save {state_dir / STATE_FILE}: {exc.strerror}") from None
    return records_json


def _dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


# Runs once per target and poll: the common row (no incident) is built inline, and only the
# rare one goes through a function call. Reading rows back is state_codec's.

def _records_to_rows(records: dict[str, TargetRecord]) -> dict[str, list[Any]]:
    return {
        target: [r.last_poll, r.absent_since, r.good_since, r.good_first_mtime]
        if r.incident is None else _record_to_row(r)
        for target, r in records.items()
    }


def _record_to_row(record: TargetRecord) -> list[Any]:
    incident = record.incident
    row: list[Any] = [record.last_poll, record.absent_since, record.good_since,
                      record.good_first_mtime]
    if incident is not None:
        row += [incident.id, incident.opened, incident.status]
        if incident.held:  # left out when delivered: the row a previous version wrote
            row.append(True)
    return row
