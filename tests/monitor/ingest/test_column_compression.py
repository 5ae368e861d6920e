"""Ingest's three large JSON columns are compressed with lz4 on PostgreSQL (migration 0012,
issue 23): pglz, PostgreSQL's default, cost the server about 2 of its 9 ms a post. What is
stored reads back the same; SQLite has no such setting and keeps its plain text."""

from __future__ import annotations

import pytest
from django.db import connection
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
    if connection.vendor != "postgresql":
        return
    expected = "l" if lz4_available() else ""  # "": the server's default_toast_compression
    with connection.cursor() as cursor:
        for table, column in COLUMNS.items():
            cursor.execute("SELECT attcompression FROM pg_attribute WHERE attrelid = %s::regclass"
                           " AND attname = %s", [table, column])
            assert cursor.fetchone() == (expected,), (table, column)
        cursor.execute("SELECT pg_column_compression(record) FROM monitor_hostreport "
                       "WHERE id = %s", [stored.id])
        assert cursor.fetchone() == ("lz4" if expected else "pglz",)
