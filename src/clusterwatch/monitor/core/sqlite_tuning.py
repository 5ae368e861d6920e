"""SQLite, the embedded default, shared by several gunicorn workers.

WAL lets readers go on while a worker writes, and the busy timeout makes a writer wait for
the lock instead of failing at once with "database is locked".

SQLite's busy handler waits by sleeping in growing steps (1, 2, 5, 10, ... 100 ms) and
retrying, so a writer that waits wakes up to 100 ms after the lock is free, and one that
keeps losing the race waits for hundreds of ms: with 4 ingest posts at once the p99 was
111 ms and the maximum 668 ms. `write_lock()` queues ingest's writers on a file lock
instead: the kernel wakes the next one as soon as the lock is released (measured with
benchmarks/bench_monitor.py, 4 connections: p99 92-106 -> 45-49 ms, maximum 207-365 ->
55 ms, p50 unchanged). Taken for the whole store call instead of from its first write, the
queue made things worse (p50 +20%): keep the locked part to the statements. BEGIN
IMMEDIATE does not help (same busy handler; p99 and maximum no better). Other writers
(retention, tokens, the admin) still meet the busy handler, as before.

A worker keeps its connection between requests (CONN_MAX_AGE, core/database_url.py), so
what one request leaves open would reach the next: Django drops a connection whose
autocommit was left off or that outlived its age, and `_end_open_transaction` one that a
request left inside a transaction (a BEGIN without its end), which would otherwise hold
SQLite's write lock (every other writer waits the busy timeout, then fails) or a snapshot
that stops the WAL's checkpoints.
"""

from __future__ import annotations

import fcntl
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Optional

from django.core.signals import request_finished, request_started
from django.db import connections
from django.db.backends.signals import connection_created

log = logging.getLogger(__name__)

BUSY_TIMEOUT_MS = 20_000
LOCK_SUFFIX = "-writer.lock"

# (pid, lock file path) -> descriptor. Opened per process: a descriptor inherited across a
# fork shares its flock with the parent, which would let both in at once.
_lock_files: dict[tuple[int, str], int] = {}
_UNAVAILABLE = -1


def _tune(sender: Any, connection: Any, **kwargs: Any) -> None:
    if connection.vendor != "sqlite":
        return
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA synchronous=NORMAL")


def _end_open_transaction(sender: Any, **kwargs: Any) -> None:
    """Close (which rolls back) each SQLite connection of this thread left in a transaction
    outside any atomic block, at a request's start and end, beside Django's own
    `close_old_connections`. An atomic block still open is its owner's (a test's)."""
    for connection in connections.all(initialized_only=True):
        if (connection.vendor == "sqlite" and connection.connection is not None
                and connection.connection.in_transaction and not connection.in_atomic_block):
            log.warning("database %s: a request left a transaction open; closed, so it "
                        "is rolled back", connection.alias)
            connection.close()


def connect() -> None:
    connection_created.connect(_tune, dispatch_uid="clusterwatch.monitor.core.sqlite_tuning")
    for signal in (request_started, request_finished):
        signal.connect(_end_open_transaction,
                       dispatch_uid="clusterwatch.monitor.core.sqlite_tuning.transactions")


@contextmanager
def write_lock(using: str = "default") -> Iterator[None]:
    """Queue on the database's writer lock file from the block's first write to its end.

    For a SQLite file database; elsewhere (PostgreSQL, an in-memory SQLite) a no-op. The
    file lock is taken where SQLite takes its own write lock, at the first INSERT, UPDATE
    or DELETE (not before: a worker still building its statements would make the others
    wait longer than SQLite does), and released when the block ends, so wrap a whole write
    transaction and nothing slow after it. A holder that dies releases it (the kernel
    closes its file); a holder waits for SQLite's own lock at most the busy timeout.
    """
    descriptor = _lock_descriptor(using)
    if descriptor is None:
        yield
        return
    queue = _WriterQueue(descriptor)
    try:
        with connections[using].execute_wrapper(queue):
            yield
    finally:
        if queue.held:
            fcntl.flock(descriptor, fcntl.LOCK_UN)


class _WriterQueue:
    """A Django execute wrapper that takes the file lock before the first write statement."""

    def __init__(self, descriptor: int) -> None:
        self.descriptor = descriptor
        self.held = False

    def __call__(self, execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if not self.held and _writes(sql):
            fcntl.flock(self.descriptor, fcntl.LOCK_EX)
            self.held = True
        return execute(sql, params, many, context)


def _writes(sql: str) -> bool:
    return sql.lstrip()[:7].upper().startswith(("INSERT", "UPDATE", "DELETE", "REPLACE"))


def lock_path(using: str = "default") -> Optional[str]:
    """The lock file of a SQLite file database (next to it), else None."""
    connection = connections[using]
    if connection.vendor != "sqlite" or connection.is_in_memory_db():
        return None
    return f"{connection.settings_dict['NAME']}{LOCK_SUFFIX}"


def _lock_descriptor(using: str) -> Optional[int]:
    path = lock_path(using)
    if path is None:
        return None
    slot = (os.getpid(), path)
    descriptor = _lock_files.get(slot)
    if descriptor is None:
        try:
            descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            # The database's directory is writable (WAL needs that), so this is rare: go on
            # without the queue, as before it existed, and say so once per process.
            log.warning("SQLite writer lock %s unavailable (%s); writers wait on SQLite's "
                        "busy handler", path, exc.strerror)
            descriptor = _UNAVAILABLE
        _lock_files[slot] = descriptor
    return None if descriptor == _UNAVAILABLE else descriptor
