"""Delivery to the monitor over verified HTTPS, and the bounded local buffer records wait in.

Every record is buffered first (one file each, written atomically, once the run committed
it with its log positions: see commit.py) and a delivery pass posts the buffer oldest first.
A 2xx removes the record; a permanent rejection sets it aside and the pass goes on; anything
transient stops the pass, leaving the rest for the next run. Delivery is at least once: a
run killed between an accepted post and the file's removal posts the same record again, and
the monitor stores a record identical to one it has once.

Counts of dropped and set-aside records travel in the `delivery` section of the next record
built. `Buffer.add` moves the counts a record reports out of `delivery.json` into that
record's file; if the record is itself dropped or set aside, its counts move back. So every
drop is reported by exactly one delivered record (twice at worst after a crash, never zero
times), however many records wait in the buffer at once.
"""

import contextlib
import json
import logging
import os
import re
import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from clusterwatch.reporter import utc_text
from clusterwatch.reporter.envfile import check_monitor_url, check_token
from clusterwatch.reporter.https_post import Poster, https_poster
from clusterwatch.reporter.state import COUNTS_FILE, write_atomically
from clusterwatch.reporter.storable import RISKY_JSON, make_storable

log = logging.getLogger(__name__)

BUFFER_DIR = "buffer"
SET_ASIDE_DIR = "set_aside"
SET_ASIDE_KEEP = 100  # set-aside records kept for an operator; they were counted already
STALE_TEMP_SECONDS = 600.0  # a write takes milliseconds: an older temp file is a dead run's
REASON_BUFFER_FULL = "dropped: buffer full"
REASON_UNREADABLE = "set aside: unreadable record"

# Statuses that say nothing against the record: retried on the next run.
RETRY_STATUSES = frozenset([408, 429])
# The monitor refuses the sender or the address, not the record (wrong token, wrong path,
# a proxy wanting credentials): setting every record aside would throw the backlog away
# over a configuration fix, so these stop the pass and keep the records, like a 5xx.
SENDER_STATUSES = frozenset([401, 403, 404, 405, 407])

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
        with open(os.path.join(self.dir, name), "rb") as handle:
            return handle.read()

    def counts(self) -> Dict[str, Any]:
        """The persisted counters: dropped, set_aside, reasons, last_error, last_error_at."""
        path = os.path.join(self.state_dir, COUNTS_FILE)
        try:
            with open(path, "rb") as handle:
                data = json.loads(handle.read().decode("utf-8"))
        except FileNotFoundError:
            data = {}
        except (OSError, ValueError) as exc:
            log.warning("cannot read %s (%s); delivery counts start again from zero",
                        path, type(exc).__name__)
            data = {}
        return _normal_counts(data if isinstance(data, dict) else {})

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
        data = _encode(record)
        name = name or self.next_name()
        names = [other for other in self.names() if other != name]
        _write_atomically(self.dir, name, data)
        counts = self.counts()
        _move(_carried_counts(record), counts, -1)
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
        _move(_carried_counts(record), counts, +1)
        counts["set_aside"] += 1
        _bump(counts["reasons"], reason)
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

    def _save_counts(self, counts: Dict[str, Any]) -> None:
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
            _move(_carried_counts(_load_quietly(os.path.join(self.dir, name))), counts, +1)
            counts["dropped"] += 1
            _bump(counts["reasons"], REASON_BUFFER_FULL)
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


def deliver(buffer: Buffer, url: str, token: str, ca_bundle: Optional[str] = None,
            timeout: float = 30.0, now: Clock = time.time,
            poster: Optional[Poster] = None) -> Dict[str, Any]:
    """Post every buffered record, oldest first; the caller has buffered the current one.

    Returns `delivered_all` (every record went and was accepted), `delivered`, `set_aside`
    (this pass), `backlog` (records still waiting), `last_error` (None on a clean pass) and
    `section` (what `build_section` now gives the next record). Raises ConfigError, before
    posting anything, for a URL or token that must not be used. Each post's whole exchange
    ends within `timeout` seconds (see https_post). `poster` replaces the HTTPS post (one seam
    for tests); it returns (status or None when no answer came, description).
    """
    check_monitor_url(url)
    check_token(token)
    delivered = set_aside = 0
    error = None  # type: Optional[str]
    post = poster
    if post is None:
        try:
            post = https_poster(url, token, ca_bundle, timeout)
        except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError
            error = _scrub(f"tls: cannot load CA bundle {ca_bundle}: {exc}", token)
    if post is not None:
        delivered, set_aside, error = _post_backlog(buffer, post, token)
    buffer.note_pass(error, now())
    backlog = len(buffer.names())
    if error is None:
        log.info("delivered %d record(s)", delivered)
    return {
        "delivered_all": error is None and backlog == 0,
        "delivered": delivered,
        "set_aside": set_aside,
        "backlog": backlog,
        "last_error": error,
        "section": build_section(buffer),
    }


def _post_backlog(buffer: Buffer, post: Poster, token: str) -> Tuple[int, int, Optional[str]]:
    """One pass over the buffer: (delivered, set aside, the last failure or None)."""
    delivered = set_aside = 0
    error = None  # type: Optional[str]
    for name in buffer.names():
        try:
            data = buffer.read(name)
            record = json.loads(data.decode("utf-8"))
        except (OSError, ValueError) as exc:
            # A file that is not a record would otherwise block or be rejected forever.
            error = f"{REASON_UNREADABLE}: {type(exc).__name__}"
            log.warning("record %s: %s; set aside", name, error)
            buffer.set_aside(name, REASON_UNREADABLE, type(exc).__name__)
            set_aside += 1
            continue
        if RISKY_JSON.search(data) and isinstance(record, dict):
            # Buffered by a reporter that did not yet make its records storable.
            data = _encode(make_storable(record))
        status, description = post(data)
        description = _scrub(description, token)
        verdict = classify(status)
        if verdict == "delivered":
            buffer.remove(name)
            delivered += 1
            continue
        error = description
        if verdict == "rejected":
            log.warning("the monitor rejected record %s (%s); set aside", name, description)
            buffer.set_aside(name, f"set aside: HTTP {status}", description,
                             record if isinstance(record, dict) else None)
            set_aside += 1
            continue
        log.warning("delivery stopped at record %s: %s", name, description)
        break
    return delivered, set_aside, error


def classify(status: Optional[int]) -> str:
    """`delivered`, `rejected` (set aside, go on) or `retry` (stop, keep) for a post's status.

    No answer (connection, TLS, timeout), 5xx, 408, 429, the sender statuses and any
    redirect (not followed: it would carry the token elsewhere) are `retry`.
    """
    if status is None:
        return "retry"
    if 200 <= status < 300:
        return "delivered"
    if 400 <= status < 500 and status not in RETRY_STATUSES and status not in SENDER_STATUSES:
        return "rejected"
    return "retry"


def _scrub(text: str, token: str) -> str:
    return text.replace(token, "<token>") if token else text


def _normal_counts(data: Mapping[str, Any]) -> Dict[str, Any]:
    reasons = data.get("reasons")
    last_error = data.get("last_error")
    last_error_at = data.get("last_error_at")
    return {
        "dropped": _count(data.get("dropped")),
        "set_aside": _count(data.get("set_aside")),
        "reasons": {str(key): _count(value)
                    for key, value in (reasons.items() if isinstance(reasons, dict) else [])
                    if _count(value) > 0},
        "last_error": last_error if isinstance(last_error, str) else None,
        "last_error_at": last_error_at if isinstance(last_error_at, str) else None,
    }


def _carried_counts(record: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    """The counts a record's `delivery` section reports (zero for anything malformed)."""
    section = record.get("delivery") if isinstance(record, Mapping) else None
    return _normal_counts(section if isinstance(section, dict) else {})


def _move(carried: Mapping[str, Any], counts: Dict[str, Any], sign: int) -> None:
    """Add (`sign` +1) or take away (-1) `carried` from `counts`, never below zero."""
    for key in ("dropped", "set_aside"):
        counts[key] = max(0, counts[key] + sign * carried[key])
    reasons = counts["reasons"]
    for reason, number in carried["reasons"].items():
        left = reasons.get(reason, 0) + sign * number
        if left > 0:
            reasons[reason] = left
        else:
            reasons.pop(reason, None)


def _bump(reasons: Dict[str, int], reason: str) -> None:
    reasons[reason] = reasons.get(reason, 0) + 1


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _encode(record: Mapping[str, Any]) -> bytes:
    return json.dumps(record, sort_keys=True, separators=(",", ":")).encode("utf-8")


def _load_quietly(path: str) -> Optional[Dict[str, Any]]:
    try:
        with open(path, "rb") as handle:
            data = json.loads(handle.read().decode("utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _write_atomically(directory: str, name: str, data: bytes, durable: bool = True) -> None:
    # Temp files carry _TEMP_PREFIX: never taken for a record, cleaned when stale.
    write_atomically(os.path.join(directory, name), data, durable=durable,
                     temp_prefix=_TEMP_PREFIX)
