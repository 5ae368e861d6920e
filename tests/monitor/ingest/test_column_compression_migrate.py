"""Migration 0012 (lz4 for ingest's JSON columns) run by the installed console script while
another session holds a transaction on one of its tables: `migrate` waits a few seconds
only, exits 1 with a line that says what to do, changes nothing, and runs the next time."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from clusterwatch.loopback.monitor_server import monitor_environ, private_database
from clusterwatch.monitor.core.database_url import parse
from tests.support.monitor_console import console


def _connect(database: dict[str, str]) -> Any:
    import psycopg

    entry = parse(database["CLUSTERWATCH_DATABASE_URL"],
                  database.get("CLUSTERWATCH_DATABASE_PASSWORD_FILE"))
    return psycopg.connect(host=entry["HOST"], port=entry["PORT"] or 5432, user=entry["USER"],
                           password=entry["PASSWORD"], dbname=entry["NAME"]), entry


def test_migrate_gives_up_on_a_table_another_session_holds_and_changes_nothing(
        tmp_path: Path, migrated_database: dict[str, str]) -> None:
    if not os.environ.get("CLUSTERWATCH_DATABASE_URL", "").startswith(("postgres:",
                                                                       "postgresql:")):
        pytest.skip("PostgreSQL's lock; SQLite has no column compression")
    with private_database(tmp_path, template=migrated_database) as database:
        environ = monitor_environ(tmp_path / "data", database)
        back = console(environ, "migrate", "monitor", "0011", "--noinput")
        assert back.returncode == 0, back.stderr[-2000:]
        other, entry = _connect(database)
        with other:
            lz4 = other.execute("SELECT 'lz4' = ANY(enumvals) FROM pg_settings "
                                "WHERE name = 'default_toast_compression'").fetchone()
            other.commit()
            if not (lz4 and lz4[0]):
                pytest.skip("this PostgreSQL has no lz4: the migration takes no lock")
            # another host's request, its transaction left open
            other.execute("SELECT count(*) FROM monitor_latestqueue").fetchone()
            held = console(environ, "migrate", "--noinput")
            other.rollback()
            compressions = dict(other.execute(
                "SELECT attname, attcompression FROM pg_attribute WHERE attrelid IN "
                "('monitor_hostreport'::regclass, 'monitor_latestreport'::regclass, "
                "'monitor_latestqueue'::regclass) AND attname IN "
                "('record', 'summary', 'page_slice')").fetchall())
            applied = other.execute("SELECT count(*) FROM django_migrations WHERE app = "
                                    "'monitor' AND name = '0012_lz4_json_columns'").fetchone()
        assert held.returncode == 1, (held.stdout + held.stderr)[-2000:]
        assert ("database error: monitor_latestqueue: another transaction held the table for "
                "more than 5s") in held.stderr
        assert "run migrate again" in held.stderr
        if entry["PASSWORD"]:
            assert entry["PASSWORD"] not in held.stdout + held.stderr
        assert compressions == {"record": "", "summary": "", "page_slice": ""}
        assert applied == (0,)
        again = console(environ, "migrate", "--noinput")
        assert again.returncode == 0, again.stderr[-2000:]
        other, _ = _connect(database)
        with other:
            assert set(other.execute(
                "SELECT attcompression FROM pg_attribute WHERE attrelid = "
                "'monitor_latestqueue'::regclass AND attname = 'page_slice'").fetchall()) == {
                    ("l",)}
