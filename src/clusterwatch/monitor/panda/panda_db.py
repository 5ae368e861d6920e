"""The rows `remote.builder.build_record` needs, read from the PanDA server's database.

Read-only three times over: the session's transactions default to READ ONLY (`SET SESSION
CHARACTERISTICS`), the one transaction every table is read in is opened READ ONLY
(REPEATABLE READ, so the five tables are one snapshot), and nothing here writes. Each
statement has `statement_timeout`, the connection a connect timeout: a slow server makes a
table a failed source, never a hung timer run.

Each table is read in a savepoint of its own, so one that fails (missing, renamed, timed
out) becomes `SourceFailed` for its part while the others are still read; a connection that
fails makes every table `SourceFailed` with the same reason. Queries are schema-qualified
(the schema is an identifier, quoted as one) and take every value as a parameter. Times go
in as naive UTC, as the server writes its `timestamp` columns.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo
from psycopg.rows import dict_row

from clusterwatch.monitor.panda.panda_settings import PandaDatabase
from clusterwatch.monitor.panda.remote.builder import ServerRows
from clusterwatch.monitor.panda.remote.dialogs import WINDOW as DIALOG_WINDOW
from clusterwatch.monitor.panda.remote.times import server_time
from clusterwatch.monitor.panda.server_rows import (
    DialogRow,
    InstanceRow,
    MetricsRow,
    Rows,
    SourceFailed,
    WorkerRow,
    WorkerStatsRow,
    columns,
)
from clusterwatch.reporter.monitor_surface import CANDIDATE_WINDOW_S, LIVE_STATUSES

CONNECT_TIMEOUT_S = 10
STATEMENT_TIMEOUT_MS = 30_000
APPLICATION = "clusterwatch-remote-harvester"
# Workers updated in the last 24 hours (every window the builder counts in: started, ended,
# submitted, not finished) or still live, whenever updated (live and overdue). Bounded:
# newest first, so a harvester with more rows than this loses its oldest live ones.
WORKER_LIMIT = 100_000
WORKER_WINDOW = dt.timedelta(seconds=CANDIDATE_WINDOW_S)
METRICS_WINDOW = dt.timedelta(hours=1)  # the latest per login node; one every 5 minutes


def connect(database: PandaDatabase) -> psycopg.Connection[dict[str, Any]]:
    """A read-only session on the PanDA database (psycopg.Error when it cannot be had)."""
    connection = psycopg.connect(
        make_conninfo("", **database.options), host=database.host, port=database.port,
        dbname=database.dbname, user=database.user,
        password=database.password or None, connect_timeout=CONNECT_TIMEOUT_S,
        application_name=APPLICATION, row_factory=dict_row, autocommit=True,
        options=f"-c statement_timeout={STATEMENT_TIMEOUT_MS} -c timezone=UTC")
    try:
        connection.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
        connection.read_only = True
        connection.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
    except psycopg.Error:
        connection.close()
        raise
    return connection


def read_server_rows(database: PandaDatabase, harvester_id: str,
                     now: dt.datetime) -> ServerRows:
    """Every table's rows for `harvester_id` at `now`, or why a table could not be read."""
    try:
        connection = connect(database)
    except psycopg.Error as exc:
        failed = _failure(exc)
        return ServerRows(failed, failed, failed, failed, failed)
    with connection:
        return rows_from(connection, database.schema, harvester_id, now)


def rows_from(connection: psycopg.Connection[dict[str, Any]], schema: str, harvester_id: str,
              now: dt.datetime) -> ServerRows:
    """The five tables, in one read-only transaction of `connection`."""
    now = server_time(now)
    reader = _Reader(connection, schema, harvester_id)
    with connection.transaction():
        instances: Rows[InstanceRow] = reader.read(
            "harvester_instances", InstanceRow, "harvester_id", sql.SQL(""), ())
        workers: Rows[WorkerRow] = reader.read(
            "harvester_workers", WorkerRow, "harvesterid",
            sql.SQL(" AND (lastupdate > %s OR status = ANY(%s))"
                    " ORDER BY lastupdate DESC, workerid DESC LIMIT %s"),
            (now - WORKER_WINDOW, list(LIVE_STATUSES), WORKER_LIMIT))
        dialogs: Rows[DialogRow] = reader.read(
            "harvester_dialogs", DialogRow, "harvester_id",
            sql.SQL(" AND creationtime > %s"), (now - DIALOG_WINDOW,))
        metrics: Rows[MetricsRow] = reader.read(
            "harvester_metrics", MetricsRow, "harvester_id",
            sql.SQL(" AND creation_time > %s"), (now - METRICS_WINDOW,))
        stats: Rows[WorkerStatsRow] = reader.read(
            "harvester_worker_stats", WorkerStatsRow, "harvester_id", sql.SQL(""), ())
    return ServerRows(instances, workers, dialogs, metrics, stats)


class _Reader:
    def __init__(self, connection: psycopg.Connection[dict[str, Any]], schema: str,
                 harvester_id: str) -> None:
        self.connection, self.schema, self.harvester_id = connection, schema, harvester_id

    def read(self, table: str, row_type: type, id_column: str, rest: sql.Composable,
             parameters: Sequence[Any]) -> Any:
        query = sql.SQL("SELECT {columns} FROM {table} WHERE {id} = %s").format(
            columns=sql.SQL(", ").join(sql.Identifier(name) for name in columns(row_type)),
            table=sql.Identifier(self.schema, table), id=sql.Identifier(id_column)) + rest
        try:
            with self.connection.transaction():  # a savepoint: a failure spares the others
                return self.connection.execute(query, (self.harvester_id, *parameters)
                                               ).fetchall()
        except psycopg.Error as exc:
            return _failure(exc)


def _failure(exc: psycopg.Error) -> SourceFailed:
    # The driver's first line names the server, the user or the relation, never a password;
    # the record names the table.
    lines = str(exc).strip().splitlines()
    return SourceFailed.of(type(exc)(lines[0]) if lines else exc)
