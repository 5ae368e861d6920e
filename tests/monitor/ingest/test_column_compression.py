"""Ingest's three large JSON columns are compressed with lz4 on PostgreSQL (migration 0012,
issue 23): pglz, PostgreSQL's default, cost the server about 2 of its 9 ms a post. What is
stored reads back the same; SQLite has no such setting and keeps its plain text."""

from __future__ import annotations

import contextlib
import importlib
import types
from typing import Any

import pytest
from django.apps import apps
from django.db import OperationalError, connection
from django.test import Client

from clusterwatch.monitor.core.models import HostReport, LatestQueue, LatestReport
from tests.monitor.ingest.support import new_token, post
from tests.monitor.records import KEY, example

pytestmark = pytest.mark.django_db

COLUMNS = {"monitor_hostreport": "record", "monitor_latestreport": "summary",
           "monitor_latestqueue": "page_slice"}


def large_record() -> dict[str, object]:
    """The example record with enough reasons (distinct, but alike) to be kept out of line
    and compressed: PostgreSQL compresses only values of 2 kB and more."""
    record = example()
    queue = next(iter(record["submission"]["queues"]))
    record["harvester_db"] = {"not_finished_reasons": {queue: {
        f"Job {n} was held: the worker's proxy on wn{n:03d}.example.org expired": {
            "count": n % 7 + 1, "source": "condor_event_log"}
        for n in range(400)}}}
    return record


def lz4_available() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 'lz4' = ANY(enumvals) FROM pg_settings "
                       "WHERE name = 'default_toast_compression'")
        row = cursor.fetchone()
    return bool(row and row[0])


def test_the_json_columns_are_compressed_with_lz4_and_read_back_the_same(
        client: Client) -> None:
    record = large_record()
    assert post(client, new_token(), record).status_code == 201
    stored = HostReport.objects.get(key=KEY)
    assert stored.record == record
    assert LatestReport.objects.get(key=KEY).summary is not None
    assert LatestQueue.objects.filter(key=KEY).exclude(page_slice=None).exists()
    if connection.vendor != "postgresql" or connection.pg_version < 140000:
        return  # no compression setting before PostgreSQL 14
    expected = "l" if lz4_available() else ""  # "": the server's default_toast_compression
    with connection.cursor() as cursor:
        for table, column in COLUMNS.items():
            cursor.execute("SELECT attcompression FROM pg_attribute WHERE attrelid = %s::regclass"
                           " AND attname = %s", [table, column])
            assert cursor.fetchone() == (expected,), (table, column)
        cursor.execute("SELECT pg_column_compression(record) FROM monitor_hostreport "
                       "WHERE id = %s", [stored.id])
        assert cursor.fetchone() == ("lz4" if expected else "pglz",)


def test_the_migration_reversed_leaves_the_columns_to_the_servers_default() -> None:
    migration = importlib.import_module(
        "clusterwatch.monitor.core.migrations.0012_lz4_json_columns")
    (operation,) = migration.Migration.operations
    compressible = connection.vendor == "postgresql" and connection.pg_version >= 140000
    with editor_of_this_test() as editor:
        operation.reverse_code(apps, editor)  # on SQLite, and before 14: nothing to do
    if compressible:
        assert compressions() == {column: "" for column in COLUMNS.values()}
    with editor_of_this_test() as editor:
        operation.code(apps, editor)
    if compressible:
        assert compressions() == {column: "l" if lz4_available() else ""
                                  for column in COLUMNS.values()}
    assert HostReport.objects.count() == 0  # the tables are still there to be read


def editor_of_this_test() -> Any:
    """PostgreSQL's schema editor; on SQLite, whose editor cannot open inside the test's
    transaction, what the migration reads of one: its connection (it returns on SQLite)."""
    if connection.vendor == "postgresql":
        return connection.schema_editor()
    return contextlib.nullcontext(types.SimpleNamespace(connection=connection))


def compressions() -> dict[str, str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT attname, attcompression FROM pg_attribute WHERE attrelid IN "
                       "('monitor_hostreport'::regclass, 'monitor_latestreport'::regclass, "
                       "'monitor_latestqueue'::regclass) AND attname = ANY(%s)",
                       [list(COLUMNS.values())])
        return dict(cursor.fetchall())


def test_the_migration_waits_for_a_lock_only_so_long_and_then_changes_nothing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # SET COMPRESSION needs the table to itself: behind it, every request on the table would
    # wait for whatever transaction another host holds open, for as long as it lasts.
    if connection.vendor != "postgresql" or not lz4_available():
        pytest.skip("PostgreSQL built with lz4 takes the table's lock")
    migration = importlib.import_module(
        "clusterwatch.monitor.core.migrations.0012_lz4_json_columns")
    monkeypatch.setattr(migration, "LOCK_WAIT", "100ms")
    (operation,) = migration.Migration.operations
    before = compressions()
    assert set(before.values()) == {"l"}
    other = connection.copy()
    try:
        with other.cursor() as cursor:  # another host's request, its transaction open
            cursor.execute("BEGIN")
            cursor.execute("SELECT count(*) FROM monitor_latestqueue")
            with (pytest.raises(OperationalError,
                                match=r"monitor_latestqueue: another transaction held the "
                                      r"table for more than 100ms .* run migrate again"),
                  editor_of_this_test() as editor):
                operation.reverse_code(apps, editor)  # the last of its three tables waits
            cursor.execute("ROLLBACK")
    finally:
        other.close()
    # All or nothing: the two tables it had altered first are as they were.
    assert compressions() == before
