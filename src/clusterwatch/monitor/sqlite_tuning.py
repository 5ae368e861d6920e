"""SQLite, the embedded default, shared by several gunicorn workers.

WAL lets readers go on while a worker writes, and the busy timeout makes a writer wait for
the lock instead of failing at once with "database is locked".
"""

from __future__ import annotations

from typing import Any

from django.db.backends.signals import connection_created

BUSY_TIMEOUT_MS = 20_000


def _tune(sender: Any, connection: Any, **kwargs: Any) -> None:
    if connection.vendor != "sqlite":
        return
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA synchronous=NORMAL")


def connect() -> None:
    connection_created.connect(_tune, dispatch_uid="clusterwatch.monitor.sqlite_tuning")
