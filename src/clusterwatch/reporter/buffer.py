"""The bounded local buffer that records wait in for delivery: one file each under
`state_dir/buffer/`, written atomically, posted oldest first by the delivery pass.

A record is buffered once the run committed it with its log positions (see commit.py).
Records the monitor refused for good are moved to `set_aside/` for an operator; the counts of
records lost either way are kept in `delivery.json` until a record reports them (see
delivery_counts.py).

Python 3.6 compatible, standard library only (see the package docstring).
"""

import contextlib
import json
import logging
import os
import re
import time
from typing import Any, Callable, Dict, List, Mapping, Optional

from clusterwatch.reporter import utc_text
from clusterwatch.reporter.delivery_counts import (
    Counts,
    carried_counts,
    count_loss,
    move,
    normal_counts,
)
from clusterwatch.reporter.regular_read import open_regular
from clusterwatch.reporter.state import COUNTS_FILE, write_atomically

log = logging.getLogger(__name__)

BUFFER_DIR = "buffer"
SET_ASIDE_DIR = "set_aside"
SET_ASIDE_KEEP = 100  # set-aside records kept for an operator; they were counted already
STALE_TEMP_SECONDS = 600.0  # a write takes milliseconds: an older temp file is a dead run's
REASON_BUFFER_FULL = "dropped: buffer full"

_RECORD_NAME = re.compile(r"(\d{20})\.json\Z")
_TEMP_PREFIX = ".tmp-"

Clock = Callable[[], float]


class Buffer:
    """Records waiting for delivery under `state_dir/buffer/`, oldest first by name.

    Bounded by `max_records` and `max_bytes`: when a new record passes the bound, the OLDEST
    records are dropped and counted. The newest record carries the host's current state and
    the counts of everything lost so far, so it is the one worth keeping; an old interval's
    counts are what the monitor can best do without. The newest record is never dropped,
    even when it alone exceeds `max_bytes`.
    """

    def __init__(self, state_dir: str, max_records: int = 2000,
                 max_bytes: int = 50 * 1024 * 1024, clock: Clock = time.time) -> None:
        self.state_dir = state_dir
        self.dir = os.path.join(state_dir, BUFFER_DIR)
        self.set_aside_dir = os.path.join(state_dir, SET_ASIDE_DIR)
        self.max_records = max(1, max_records)
        self.max_bytes = max_bytes
        self.clock = clock
        for directory in (self.dir, self.set_aside_dir):
            os.makedirs(directory, mode=0o700, exist_ok=True)
        self._clean_temps()

    # -- reading ----------------------------------------------------------------------------

    def names(self) -> List[str]:
        """File names of the buffered records, oldest first; temp files are not records."""
        return sorted(name for name in os.listdir(self.dir) if _RECORD_NAME.match(name))

    def read(self, name: str) -> bytes:
        with open_regular(os.path.join(self.dir, name)) as handle:
            return handle.read()

    def counts(self) -> Counts:
        """The persisted counters: dropped, set_aside, reasons, last_error, last_error_at."""
        path = os.path.join(self.state_dir, COUNTS_FILE)
        try:
            with open_regular(path) as handle:
                data = json.loads(handle.read().decode("utf-8"))
        except FileNotFoundError:
            data = {}
        except (OSError, ValueError) as exc:
            log.warning("cannot read %s (%s); delivery counts start again from zero",
                        path, type(exc).__name__)
            data = {}
        return normal_counts(data if isinstance(data, dict) else {})

    def section(self) -> Dict[str, Any]:
        return build_section(self)

    # -- writing ----------------------------------------------------------------------------

    def next_name(self) -> str:
        """The file name the next record gets: after every buffered one, by the clock."""
        names = self.names()
        stamp = int(self.clock() * 1e9)
        if names:
            # A clock stepped back must not sort the new record before older ones.
            stamp = max(stamp, int(names[-1][:20]) + 1)
        return f"{stamp:020d}.json"

    def add(self, record: Mapping[str, Any], name: Optional[str] = None) -> str:
        """Buffer `record` (durably) as `name` (default: `next_name()`) and return the name;
        then enforce the bound."""
        data = encode(record)
        name = name or self.next_name()
        names = [other for other in self.names() if other != name]
        _write_atomically(self.dir, name, data)
        counts = self.counts()
        move(carried_counts(record), counts, -1)
        self._save_counts(counts)
        self._enforce_bound(sorted([*names, name]))
        return name

    def remove(self, name: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(self.dir, name))

    def set_aside(self, name: str, reason: str, detail: str = "",
                  record: Optional[Mapping[str, Any]] = None) -> None:
        """Move a permanently rejected record to `set_aside/`, counted under `reason`."""
        counts = self.counts()
        move(carried_counts(record), counts, +1)
        count_loss(counts, "set_aside", reason)
        # Counts first, then the move: a crash in between re-posts the record and counts
        # it twice rather than never.
        self._save_counts(counts)
        stem = name[:-len(".json")]
        with contextlib.suppress(OSError):
            _write_atomically(self.set_aside_dir, stem + ".reason.txt",
                              f"{reason}\n{detail}\n".encode(), durable=False)
        os.replace(os.path.join(self.dir, name), os.path.join(self.set_aside_dir, name))
        self._trim_set_aside()

    def note_pass(self, error: Optional[str], at: float) -> None:
        """Remember the pass's last failure for the next record (cleared by a clean pass)."""
        counts = self.counts()
        counts["last_error"] = error
        counts["last_error_at"] = utc_text(at) if error is not None else None
        self._save_counts(counts)

    # -- internals --------------------------------------------------------------------------

    def _save_counts(self, counts: Counts) -> None:
        data = json.dumps(counts, sort_keys=True, indent=1).encode("utf-8")
        _write_atomically(self.state_dir, COUNTS_FILE, data)

    def _enforce_bound(self, names: List[str]) -> None:
        sizes = {}  # type: Dict[str, int]
        for name in names:
            with contextlib.suppress(OSError):
                sizes[name] = os.stat(os.path.join(self.dir, name)).st_size
        names = [name for name in names if name in sizes]
        total = sum(sizes.values())
        doomed = []  # type: List[str]
        while len(names) > 1 and (len(names) > self.max_records or total > self.max_bytes):
            oldest = names.pop(0)
            total -= sizes[oldest]
            doomed.append(oldest)
        if not doomed:
            return
        counts = self.counts()
        for name in doomed:
            move(carried_counts(_load_quietly(os.path.join(self.dir, name))), counts, +1)
            count_loss(counts, "dropped", REASON_BUFFER_FULL)
        self._save_counts(counts)  # before the unlinks: a crash over-counts, never hides
        for name in doomed:
            self.remove(name)
        log.warning("delivery buffer full (%d records or %d bytes at most): dropped the %d "
                    "oldest", self.max_records, self.max_bytes, len(doomed))

    def _trim_set_aside(self) -> None:
        stems = sorted(set(name[:20] for name in os.listdir(self.set_aside_dir)
                           if name[:20].isdigit()))
        for stem in stems[:max(0, len(stems) - SET_ASIDE_KEEP)]:
            for suffix in (".json", ".reason.txt"):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(os.path.join(self.set_aside_dir, stem + suffix))

    def _clean_temps(self) -> None:
        """Remove what a run killed mid-write left behind; such files are never records."""
        now = self.clock()
        for directory in (self.dir, self.set_aside_dir, self.state_dir):
            for name in os.listdir(directory):
                if not name.startswith(_TEMP_PREFIX):
                    continue
                path = os.path.join(directory, name)
                with contextlib.suppress(OSError):
                    if now - os.stat(path).st_mtime > STALE_TEMP_SECONDS:
                        os.unlink(path)


def build_section(buffer: Buffer) -> Dict[str, Any]:
    """The record's `delivery` section: this host's backlog and what it lost, and why.

    `backlog` counts the records waiting before this one; `dropped` and `set_aside` count
    records lost since the last record that reported them, `reasons` splits both by cause
    (`"dropped: buffer full"`, `"set aside: HTTP 413"`, ...). `last_error` is the previous
    pass's last failure (None after a clean pass), `oldest_at` the oldest waiting record's
    buffering time (UTC), None when the buffer is empty.
    """
    names = buffer.names()
    counts = buffer.counts()
    return {
        "backlog": len(names),
        "oldest_at": utc_text(int(names[0][:20]) / 1e9) if names else None,
        "dropped": counts["dropped"],
        "set_aside": counts["set_aside"],
        "reasons": dict(counts["reasons"]),
        "last_error": counts["last_error"],
        "last_error_at": counts["last_error_at"],
    }


def encode(record: Mapping[str, Any]) -> bytes:
    """A record as it is buffered and posted: sorted keys, no spaces, UTF-8."""
    return json.dumps(record, sort_keys=True, separators=(",", ":")).encode("utf-8")


def _load_quietly(path: str) -> Optional[Dict[str, Any]]:
    try:
        with open_regular(path) as handle:
            data = json.loads(handle.read().decode("utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _write_atomically(directory: str, name: str, data: bytes, durable: bool = True) -> None:
    # Temp files carry _TEMP_PREFIX: never taken for a record, cleaned when stale.
    write_atomically(os.path.join(directory, name), data, durable=durable,
                     temp_prefix=_TEMP_PREFIX)
