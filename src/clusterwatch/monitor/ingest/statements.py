"""Ingest's INSERTs and one SELECT as prepared statements: what the ORM does, for less CPU.

`Model.objects.create` and `bulk_create` build a model instance per row and compile an
expression tree per statement: for a 200 KB post's record and its 20 pushes that was about
1.5 ms of CPU of the 7 its store took (`benchmarks/README.md`, issue 23). Here the SQL of
each statement is written once per database vendor from the models' metadata and Django's
own operations (`INSERT OR IGNORE` on SQLite, `ON CONFLICT DO NOTHING` on PostgreSQL,
`RETURNING` the key), and every value goes through its field's `get_db_prep_save`, so each
column holds exactly what the ORM would write (tests/monitor/ingest/test_stored_rows.py
compares the rows on both databases and the JSON columns' text on SQLite). Like the ORM's
statements they run on the cursor's error wrapper: an IntegrityError or DataError is
Django's.

A row read by a SELECT of ours becomes an instance as a queryset's would (`instance_of`):
each column through the database's and the field's converters (SQLite's datetimes are
naive until then), then `Model.from_db`.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from typing import Any, Optional

from django.db import connections, router
from django.db.models import Field, Model
from django.db.models.constants import OnConflict

_MOST_ROWS = 100
_FIELDS: dict[tuple[Any, ...], tuple[Field[Any, Any], ...]] = {}
_SQL: dict[tuple[Any, ...], tuple[str, bool]] = {}
_COLUMNS: dict[tuple[Any, ...], tuple[Any, ...]] = {}


def binding_cursor(connection: Any) -> Any:
    """A cursor of `connection` (Django's, wrapped as `connection.cursor()` wraps its own)
    that on PostgreSQL sends the parameters apart from the SQL (psycopg's server-side
    binding), elsewhere the connection's own cursor.

    For ingest's large values: Django's psycopg cursor merges every parameter into the SQL
    text as a quoted literal, so a 200 KB record was escaped by the app and scanned again
    by the server's parser (the record's INSERT: 0.96 ms of the app's CPU and 3.35 ms of
    the server's this way, 0.16 and 2.22 ms bound apart; benchmarks/README.md). Only
    ingest's own statements use it: Django's queries stay as Django's settings make them.
    Statements are still not prepared (Django's `prepare_threshold` of None), as poolers
    need."""
    if connection.vendor != "postgresql":
        return connection.cursor()
    binding = _server_binding_cursor()
    if binding is None:  # psycopg2, which binds on the client only
        return connection.cursor()
    # What BaseDatabaseWrapper._cursor does, with this cursor class: the health check
    # first (a connection the server dropped since the last request is opened again).
    connection.close_if_health_check_failed()
    connection.ensure_connection()
    with connection.wrap_database_errors:
        return connection._prepare_cursor(binding(connection.connection))


@functools.cache
def _server_binding_cursor() -> Any:
    """Django's ServerBindingCursor, its integers sent as plain ints; None on psycopg2.

    Django's PostgreSQL operations wrap an integer field's value in psycopg's Int2, Int4 or
    Int8, which the server-side binding sends in binary without checking its range: an
    IntegerField's 2**32 + 5 was stored as 5 (psycopg 3.3), and 2**63 in a BigIntegerField
    raised a bare OverflowError. A plain int is sent as the smallest type that holds it
    (numeric past 64 bits), so the server refuses a value out of its column's range with
    the DataError the ORM's statements give."""
    from django.db.backends.postgresql import base  # imports the driver: PostgreSQL's only

    server_binding = getattr(base, "ServerBindingCursor", None)
    if server_binding is None:
        return None
    from psycopg.types.numeric import Int2, Int4, Int8

    wrapped = (Int2, Int4, Int8)

    def plain(params: Any) -> Any:
        if params is None or isinstance(params, dict):
            return params
        return [int(value) if isinstance(value, wrapped) else value for value in params]

    class IngestBindingCursor(server_binding):  # type: ignore[misc, valid-type]
        def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
            return super().execute(query, plain(params), **kwargs)

        def executemany(self, query: Any, params_seq: Any, **kwargs: Any) -> Any:
            return super().executemany(query, [plain(params) for params in params_seq],
                                       **kwargs)

    return IngestBindingCursor


def insert_instance(instance: Model) -> None:
    """Save the new `instance` as `instance.save(force_insert=True)` would (no signals are
    sent: no receiver of ingest's models exists): each concrete field's `pre_save` value but
    the automatic key, which the INSERT returns into `instance.pk`."""
    model = type(instance)
    connection = connections[router.db_for_write(model)]
    names = tuple(field.name for field in model._meta.concrete_fields
                  if field is not model._meta.auto_field)
    sql, returning = _insert_sql(model, names, connection.alias, None, True)
    params = _prepared(model, names, [field.pre_save(instance, True)
                                      for field in _fields(model, names)], connection)
    with binding_cursor(connection) as cursor:
        cursor.execute(sql, params)
        if returning:
            instance.pk = cursor.fetchone()[0]
        else:
            meta = model._meta
            instance.pk = connection.ops.last_insert_id(cursor, meta.db_table, meta.pk.column)
    instance._state.adding = False
    instance._state.db = connection.alias


def insert_ignoring_conflicts(model: type[Model], names: Sequence[str],
                              rows: Iterable[Sequence[Any]]) -> None:
    """INSERT `rows` of `model` (values in the order of the field `names`), skipping any row
    a constraint refuses, as `bulk_create(..., ignore_conflicts=True)` does."""
    connection = connections[router.db_for_write(model)]
    names = tuple(names)
    params = [_prepared(model, names, row, connection) for row in rows]
    if not params:
        return
    # One statement of many rows, not one a row: PostgreSQL parsed and planned each of a
    # post's 20 pushes apart (1.0 ms of its CPU).
    batch = rows_per_statement(model, names, len(params))
    with binding_cursor(connection) as cursor:
        for start in range(0, len(params), batch):
            chunk = params[start:start + batch]
            sql, _ = _insert_sql(model, names, connection.alias, OnConflict.IGNORE, False,
                                 len(chunk))
            cursor.execute(sql, [value for row in chunk for value in row])


def rows_per_statement(model: type[Model], names: Sequence[str], rows: int) -> int:
    """How many of `rows` rows one INSERT of `insert_ignoring_conflicts` holds: as many as
    the database's limit of bound parameters allows (SQLite's 999 at the least; Django
    gives PostgreSQL none), and at most _MOST_ROWS, so that a record of many pushes
    neither meets PostgreSQL's 65,535 nor caches one statement per count."""
    connection = connections[router.db_for_write(model)]
    allowed: int = connection.ops.bulk_batch_size(list(_fields(model, tuple(names))),
                                                  [()] * rows)
    return max(1, min(allowed, _MOST_ROWS))


def _prepared(model: type[Model], names: Sequence[str], row: Sequence[Any],
              connection: Any) -> tuple[Any, ...]:
    fields = _fields(model, tuple(names))
    if len(row) != len(fields):
        raise ValueError(f"{len(row)} values for {len(fields)} fields")
    return tuple(field.get_db_prep_save(value, connection) for field, value in zip(fields, row))


def _fields(model: type[Model], names: tuple[str, ...]) -> tuple[Field[Any, Any], ...]:
    found = _FIELDS.get((model, names))
    if found is None:
        fields = [model._meta.get_field(name) for name in names]
        assert all(isinstance(field, Field) and field.concrete for field in fields)
        found = _FIELDS[(model, names)] = tuple(fields)
    return found


def _insert_sql(model: type[Model], names: tuple[str, ...], alias: str,
                on_conflict: Optional[OnConflict], returning_pk: bool,
                rows: int = 1) -> tuple[str, bool]:
    """(the statement of `rows` rows, whether it returns the key) for the database `alias`;
    cached, since each thread's connection to one database takes the same SQL (a batch
    has at most as many rows as the database's parameter limit allows)."""
    slot = (model, names, alias, on_conflict, returning_pk, rows)
    found = _SQL.get(slot)
    if found is None:
        found = _SQL[slot] = _write_insert(model, names, alias, on_conflict, returning_pk,
                                           rows)
    return found


def _write_insert(model: type[Model], names: tuple[str, ...], alias: str,
                  on_conflict: Optional[OnConflict], returning_pk: bool,
                  rows: int) -> tuple[str, bool]:
    connection = connections[alias]
    ops, meta = connection.ops, model._meta
    fields = _fields(model, names)
    row = "(" + ", ".join(["%s"] * len(fields)) + ")"
    parts = [ops.insert_statement(on_conflict=on_conflict), ops.quote_name(meta.db_table),
             "(" + ", ".join(ops.quote_name(field.column) for field in fields) + ")",
             "VALUES " + ", ".join([row] * rows)]
    suffix = ops.on_conflict_suffix_sql(fields, on_conflict, (), ())
    if suffix:
        parts.append(suffix)
    returning = returning_pk and connection.features.can_return_columns_from_insert
    if returning:
        parts.append(ops.return_insert_columns([meta.pk])[0])
    return " ".join(parts), returning


def instance_of(model: type[Model], names: Sequence[str], values: Sequence[Any],
                alias: str) -> Model:
    """The `model` instance of the `values` of the field `names` (the columns of a row in
    that order), as a queryset loads it; fields not named are deferred.

    The converters are asked of this thread's connection each time (the backend's are
    methods of its `ops`, which read that connection's settings); only the columns'
    expressions are kept."""
    names = tuple(names)
    connection = connections[alias]
    row = list(values)
    for position, expression in enumerate(_columns(model, names)):
        converters = (connection.ops.get_db_converters(expression)
                      + expression.get_db_converters(connection))
        value = row[position]
        for converter in converters:
            value = converter(value, expression, connection)
        row[position] = value
    return model.from_db(alias, list(names), row)


def _columns(model: type[Model], names: tuple[str, ...]) -> tuple[Any, ...]:
    """The column expressions the ORM's compiler reads `names` through (`get_converters`)."""
    slot = (model, names)
    found = _COLUMNS.get(slot)
    if found is None:
        table = model._meta.db_table
        found = _COLUMNS[slot] = tuple(field.get_col(table) for field in _fields(model, names))
    return found
