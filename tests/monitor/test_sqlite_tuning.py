"""The SQLite writer queue: a file lock held from a write block's first write to its end."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.db import connection

from clusterwatch.monitor.core import sqlite_tuning

pytestmark = pytest.mark.django_db


@pytest.fixture
def lock_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    # The test database is in memory (or PostgreSQL), which gets no lock: give it a file.
    path = tmp_path / "monitor.sqlite3-writer.lock"
    monkeypatch.setattr(sqlite_tuning, "lock_path", lambda using="default": str(path))
    yield path
    for slot, descriptor in list(sqlite_tuning._lock_files.items()):
        if slot[1] == str(path):
            os.close(descriptor)
            del sqlite_tuning._lock_files[slot]


def _free(path: Path) -> bool:
    """Whether another holder could take the lock now (a second open file description)."""
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(descriptor)
    return True


def _write() -> None:
    with connection.cursor() as cursor:
        cursor.execute("UPDATE django_migrations SET app = app WHERE id < 0")


def _read() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM django_migrations")
        cursor.fetchone()


def test_it_takes_the_lock_at_the_first_write_and_keeps_it_to_the_end(lock_file: Path) -> None:
    with sqlite_tuning.write_lock():
        _read()
        assert _free(lock_file)  # reading takes no lock, so no writer waits for a reader
        _write()
        assert not _free(lock_file)
        _read()
        assert not _free(lock_file)
    assert _free(lock_file)


def test_it_releases_the_lock_when_the_block_fails(lock_file: Path) -> None:
    with pytest.raises(RuntimeError), sqlite_tuning.write_lock():
        _write()
        raise RuntimeError("store failed")
    assert _free(lock_file)
    _write()  # and the execute wrapper is gone: a write outside the block takes nothing
    assert _free(lock_file)


def test_it_creates_the_lock_file_private(lock_file: Path) -> None:
    with sqlite_tuning.write_lock():
        _write()
    assert lock_file.stat().st_mode & 0o777 == 0o600


def test_it_opens_the_file_again_in_a_forked_process(lock_file: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # A descriptor inherited across fork would share the parent's lock: each pid opens its own.
    with sqlite_tuning.write_lock():
        _write()
    monkeypatch.setattr(os, "getpid", lambda: -12345)
    with sqlite_tuning.write_lock():
        _write()
    opened = {slot[0] for slot in sqlite_tuning._lock_files if slot[1] == str(lock_file)}
    assert -12345 in opened and len(opened) == 2


def test_it_goes_on_without_the_queue_when_the_file_cannot_be_made(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    missing = tmp_path / "no" / "such" / "dir" / "lock"
    monkeypatch.setattr(sqlite_tuning, "lock_path", lambda using="default": str(missing))
    with sqlite_tuning.write_lock():
        _write()
    assert not missing.exists()


def test_it_takes_no_lock_on_the_test_database() -> None:
    # pytest-django's SQLite is in memory (one process), and PostgreSQL needs none.
    assert sqlite_tuning.lock_path() is None
    with sqlite_tuning.write_lock():
        _write()


def test_it_recognises_write_statements() -> None:
    assert sqlite_tuning._writes('INSERT INTO "t" VALUES (1)')
    assert sqlite_tuning._writes('  update "t" SET a = 1')
    assert sqlite_tuning._writes('DELETE FROM "t"')
    assert not sqlite_tuning._writes('SELECT 1')
    assert not sqlite_tuning._writes('BEGIN')
    assert not sqlite_tuning._writes('SAVEPOINT "s1"')
