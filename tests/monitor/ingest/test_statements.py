"""Ingest's prepared INSERTs (`statements`) against the ORM calls they replace, as the oracle:
every column of the rows they write, as the database holds it, on SQLite and PostgreSQL."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.db import (
    DataError,
    IntegrityError,
    close_old_connections,
    connection,
    transaction,
)
from django.test.utils import CaptureQueriesContext

from clusterwatch.monitor.core.models import HostReport, JobPush
from clusterwatch.monitor.ingest import tokens
from clusterwatch.monitor.ingest.statements import (
    binding_cursor,
    insert_ignoring_conflicts,
    insert_instance,
    rows_per_statement,
)
from tests.monitor.ingest.support import at
from tests.monitor.records import example

pytestmark = pytest.mark.django_db

ODD_RECORD = {"text": "é ü \u2028 \x7f \" \\ /", "big": 2**70, "small": -(2**63), "float": 1e-7,
              "exp": 1.5e300, "list": [None, True, False, 0.1, {"": []}], "nested": {"a": {}}}
MOMENT = dt.datetime(2026, 12, 5, 5, 6, 7, 890123, tzinfo=dt.timezone.utc)


def _raw(table: str, key: str) -> list[tuple[Any, ...]]:
    """`key`'s rows as the database holds them, every column but `id` and `key`, by id."""
    with connection.cursor() as cursor:
        sql = f"SELECT * FROM {table} WHERE key = %s ORDER BY id"  # noqa: S608 (the test's)
        cursor.execute(sql, [key])
        names = [column[0] for column in cursor.description]
        rows = cursor.fetchall()
    return [tuple(v for n, v in zip(names, row) if n not in ("id", "key")) for row in rows]


@pytest.mark.parametrize("record", [example("oracle01", at(3)), ODD_RECORD])
@pytest.mark.parametrize("with_token", [True, False])
def test_insert_instance_writes_the_row_create_writes(record: dict[str, Any],
                                                      with_token: bool) -> None:
    token = tokens.create(["oracle01", "oracle02"])[0] if with_token else None
    values = {"collected_at": at(3), "received_at": MOMENT, "size_bytes": 12345,
              "record": record, "token": token, "digest": "f" * 64}
    created = HostReport.objects.create(key="oracle01", **values)
    ours = HostReport(key="oracle02", **values)
    insert_instance(ours)
    assert (ours._state.adding, ours._state.db) == (created._state.adding, created._state.db)
    assert ours.pk is not None and ours.pk != created.pk
    assert _raw("monitor_hostreport", "oracle02") == _raw("monitor_hostreport", "oracle01")
    stored, theirs = HostReport.objects.get(pk=ours.pk), HostReport.objects.get(pk=created.pk)
    # (PostgreSQL's jsonb reads 1.5e300 back as an integer, the ORM's row too.)
    assert (stored.record, stored.token, stored.received_at) == (theirs.record, token, MOMENT)


def test_insert_instance_fails_on_a_constraint_as_create_does() -> None:
    values = {"key": "oracle03", "collected_at": at(3), "size_bytes": 1, "record": {},
              "digest": "a" * 64}
    insert_instance(HostReport(**values))
    with pytest.raises(IntegrityError), transaction.atomic():
        insert_instance(HostReport(**values))  # the same key and digest: report_digest_once
    with pytest.raises(IntegrityError), transaction.atomic():
        HostReport.objects.create(**values)
    assert HostReport.objects.filter(key="oracle03").count() == 1


def test_insert_ignoring_conflicts_writes_the_rows_bulk_create_writes() -> None:
    report = HostReport.objects.create(key="oracle04", collected_at=at(3), size_bytes=1,
                                       record={}, digest="b" * 64)
    pushes = [(6_000_000_000 + n, 2**63 - 1 - n, f"QUEUE_{n}_é", MOMENT + dt.timedelta(
        seconds=n)) for n in range(5)] + [(-(2**63), 0, "", MOMENT)]
    JobPush.objects.bulk_create([JobPush(pandaid=p, workerid=w, queue=q, key="oracle05", at=t,
                                         report=report) for p, w, q, t in pushes],
                                ignore_conflicts=True)
    names = ("pandaid", "workerid", "queue", "key", "at", "report")
    insert_ignoring_conflicts(JobPush, names, [(p, w, q, "oracle06", t, report.pk)
                                               for p, w, q, t in pushes])
    expected = _raw("monitor_jobpush", "oracle05")
    assert len(expected) == len(pushes)
    assert _raw("monitor_jobpush", "oracle06") == expected
    # A push stored already (the key's pandaid and workerid) is skipped, the others written.
    insert_ignoring_conflicts(JobPush, names, [
        (pushes[0][0], pushes[0][1], "ELSEWHERE", "oracle06", MOMENT, report.pk),
        (1, 1, "NEW", "oracle06", MOMENT, report.pk)])
    rows = JobPush.objects.filter(key="oracle06")
    assert rows.get(pandaid=pushes[0][0]).queue == "QUEUE_0_é"
    assert rows.get(pandaid=1).queue == "NEW" and rows.count() == len(pushes) + 1
    insert_ignoring_conflicts(JobPush, names, [])  # nothing to write: no statement


def test_insert_ignoring_conflicts_writes_rows_past_one_statements_batch() -> None:
    # One statement holds as many rows as the database's parameter limit allows; more go in
    # further statements, and a row repeated within one statement is skipped like any other.
    report = HostReport.objects.create(key="oracle07", collected_at=at(4), size_bytes=1,
                                       record={}, digest="c" * 64)
    names = ("pandaid", "workerid", "queue", "key", "at", "report")
    batch = rows_per_statement(JobPush, names, 10_000)
    count = 2 * batch + 7
    rows = [(n, n % 3, f"Q{n}", "oracle07", MOMENT, report.pk) for n in range(count)]
    repeated = [(0, 0, "LATER", "oracle07", MOMENT, report.pk)]
    insert_ignoring_conflicts(JobPush, names, [*rows[:3], *repeated, *rows[3:]])
    stored = dict(JobPush.objects.filter(key="oracle07").values_list("pandaid", "queue"))
    assert stored == {n: f"Q{n}" for n in range(count)}
    assert count > batch  # the rows did not fit one statement


def test_ingest_binds_its_values_apart_from_the_sql_on_postgresql() -> None:
    # The record's INSERT sends it as a parameter (server-side binding), not as a literal in
    # the SQL; Django still sees the statement (its wrappers) and translates its errors.
    odd = "it's \\ \"odd\" é"
    with CaptureQueriesContext(connection) as seen, binding_cursor(connection) as cursor:
        raw = cursor.cursor
        if connection.vendor == "postgresql":
            import psycopg

            assert isinstance(raw, psycopg.Cursor)
            assert not isinstance(raw, psycopg.ClientCursor)
        else:
            assert type(raw) is type(connection.cursor().cursor)
        cursor.execute("SELECT %s", [odd])
        assert cursor.fetchone() == (odd,)
    assert len(seen.captured_queries) == 1
    with (binding_cursor(connection) as cursor, pytest.raises(IntegrityError),
          transaction.atomic()):
        cursor.execute("INSERT INTO monitor_hostreport (id) VALUES (NULL)")


def _outcome(write: Any, key: str, table: str) -> tuple[Any, ...]:
    """What `write()` did: the rows it left under `key`, or the class of its error."""
    try:
        with transaction.atomic():
            write()
    except Exception as error:  # the outcome compared is the class itself
        return ("refused", type(error))
    return ("stored", _raw(table, key))


@pytest.mark.parametrize("size", [2**31 - 1, 2**31, 2**32 + 5, 2**63])
def test_an_integer_past_its_columns_range_fares_as_with_create(size: int) -> None:
    # PostgreSQL's int4 column: the ORM's statement is refused (DataError), and so is ours,
    # where server-side binding used to store 2**32 + 5 as 5. SQLite holds 64 bits.
    values = {"collected_at": at(3), "received_at": MOMENT, "size_bytes": size, "record": {},
              "digest": "d" * 64}
    theirs = _outcome(lambda: HostReport.objects.create(key="range01", **values), "range01",
                      "monitor_hostreport")
    ours = _outcome(lambda: insert_instance(HostReport(key="range02", **values)), "range02",
                    "monitor_hostreport")
    assert ours == theirs
    if connection.vendor == "postgresql":
        assert ours == (("stored", _raw("monitor_hostreport", "range02")) if size < 2**31
                        else ("refused", DataError))


@pytest.mark.parametrize("pandaid", [2**63 - 1, 2**63, -(2**63) - 1])
def test_a_push_past_64_bits_fares_as_with_bulk_create(pandaid: int) -> None:
    report = HostReport.objects.create(key="range03", collected_at=at(3), size_bytes=1,
                                       record={}, digest="e" * 64)
    names = ("pandaid", "workerid", "queue", "key", "at", "report")
    theirs = _outcome(lambda: JobPush.objects.bulk_create(
        [JobPush(pandaid=pandaid, workerid=1, queue="Q", key="range04", at=MOMENT,
                 report=report)], ignore_conflicts=True), "range04", "monitor_jobpush")
    ours = _outcome(lambda: insert_ignoring_conflicts(
        JobPush, names, [(pandaid, 1, "Q", "range05", MOMENT, report.pk)]), "range05",
        "monitor_jobpush")
    assert ours == theirs
    if connection.vendor == "postgresql":  # not a bare OverflowError of the driver's
        assert ours == (("stored", _raw("monitor_jobpush", "range05")) if pandaid < 2**63
                        and pandaid >= -(2**63) else ("refused", DataError))


@pytest.mark.django_db(transaction=True)
def test_a_connection_the_server_dropped_is_opened_again() -> None:
    # As Django's own cursors do at a request's first query (CONN_HEALTH_CHECKS): a kept
    # connection whose backend the server ended since is replaced, not answered with an
    # OperationalError (a 503 to the reporter).
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL's server ends the connection")
    report = HostReport.objects.create(key="dropped01", collected_at=at(3), size_bytes=1,
                                       record={}, digest="f" * 64)
    backend = connection.connection.info.backend_pid
    close_old_connections()  # a request's end: the next one checks the connection first
    other = connection.copy()
    try:
        with other.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s)", [backend])
            for _ in range(1000):  # until the server has ended it, not for a set time
                cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s",
                               [backend])
                if cursor.fetchone() == (0,):
                    break
            else:
                raise AssertionError("the backend was not ended")
    finally:
        other.close()
    names = ("pandaid", "workerid", "queue", "key", "at", "report")
    insert_ignoring_conflicts(JobPush, names, [(1, 1, "Q", "dropped01", MOMENT, report.pk)])
    assert connection.connection.info.backend_pid != backend
    assert JobPush.objects.filter(key="dropped01").count() == 1


def test_a_row_of_the_wrong_length_is_refused_before_any_statement() -> None:
    with pytest.raises(ValueError, match="2 values for 3 fields"):
        insert_ignoring_conflicts(JobPush, ("pandaid", "workerid", "queue"), [(1, 2)])
