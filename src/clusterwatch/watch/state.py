"""The watch's state file: per-target records and the outbox, saved atomically each poll.

One JSON file, `state.json`, in a directory of mode 700; a lock file serialises overlapping
runs. Records are stored as short lists, not objects: at 100,000 targets the file is read
and written every minute, and lists halve both the size and the time.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import os
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from clusterwatch.atomic_write import write_atomically
from clusterwatch.errors import RunError
from clusterwatch.notify.outbox import Outbox
from clusterwatch.watch.decisions import Incident, TargetRecord

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
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
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
                    raise StateError(
                        f"another clusterwatch watch run holds {lock_path} "
                        f"for more than {timeout:g} s"
                    ) from None
                time.sleep(0.1)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def load(state_dir: Path, repair: bool = True) -> WatchState:
    """Read the state; an absent file is an empty state.

    With `repair` (the poll, under the lock), leftovers of a killed save are removed and an
    unreadable file is moved aside; without it (read-only callers such as `status`), an
    unreadable file raises StateError and nothing is changed.
    """
    path = state_dir / STATE_FILE
    for leftover in state_dir.glob(f".{STATE_FILE}.*.tmp") if repair else ():
        # A save killed before its rename; the state file itself is whole.
        with contextlib.suppress(OSError):
            leftover.unlink()
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return WatchState()
    except OSError as exc:
        raise StateError(f"cannot read {path}: {exc.strerror}") from None
    try:
        data = json.loads(raw)
        if data.get("version") != FORMAT_VERSION:
            raise ValueError(f"unknown format version {data.get('version')!r}")
        return WatchState(
            records=_records_from_rows(data["targets"]),
            outbox=Outbox.from_json(data["outbox"]),
            last_poll=dict(data.get("last_poll", {})),
        )
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        if not repair:
            raise StateError(f"state file {path} is unreadable ({exc}); the next poll "
                             "moves it aside") from None
        # Atomic saves make this a disk fault or a hand edit. Keep the file for the
        # operator (it may hold unsent messages) and start afresh rather than stop watching.
        aside = path.with_name(f"{STATE_FILE}.corrupt-{int(time.time())}")
        os.replace(path, aside)
        log.error("state file %s is unreadable (%s); moved it to %s and started with an "
                  "empty state: open incidents and unsent messages in it are not acted on",
                  path, exc, aside)
        return WatchState()


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
        b"}",
    ))
    try:
        write_atomically(state_dir / STATE_FILE, data, mode=0o600)
    except OSError as exc:
        raise StateError(f"cannot save {state_dir / STATE_FILE}: {exc.strerror}") from None
    return records_json


def _dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


# The two conversions below run once per target and poll: the common row (no incident) is
# built inline, and only the rare one goes through a function call.

def _records_to_rows(records: dict[str, TargetRecord]) -> dict[str, list[Any]]:
    return {
        target: [r.last_poll, r.absent_since, r.good_since, r.good_first_mtime]
        if r.incident is None else _record_to_row(r)
        for target, r in records.items()
    }


def _records_from_rows(rows: dict[str, list[Any]]) -> dict[str, TargetRecord]:
    return {
        target: TargetRecord(row[0], row[1], row[2], row[3])
        if len(row) == 4 else _record_from_row(row)
        for target, row in rows.items()
    }


def _record_to_row(record: TargetRecord) -> list[Any]:
    incident = record.incident
    row: list[Any] = [record.last_poll, record.absent_since, record.good_since,
                      record.good_first_mtime]
    if incident is not None:
        row += [incident.id, incident.opened, incident.status]
    return row


def _record_from_row(row: list[Any]) -> TargetRecord:
    incident: Optional[Incident] = None
    if len(row) == 7:
        incident = Incident(id=str(row[4]), opened=float(row[5]), status=str(row[6]))
    elif len(row) != 4:
        raise ValueError(f"target record of length {len(row)}")
    return TargetRecord(row[0], row[1], row[2], row[3], incident)
