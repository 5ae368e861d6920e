"""The rows `builder.build_record` needs, read from the PanDA server's harvester tables.

The five tables are read in one read-only transaction (one snapshot) of a `panda_db` session.
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

from clusterwatch.monitor.panda.panda_db import connect, failure_of
from clusterwatch.monitor.panda.panda_settings import PandaDatabase
from clusterwatch.monitor.panda.remote.builder import ServerRows
from clusterwatch.monitor.panda.remote.dialogs import WINDOW as DIALOG_WINDOW
from clusterwatch.monitor.panda.remote.times import server_time
from clusterwatch.monitor.panda.server_rows import (
    DialogRow,
    InstanceRow,
    MetricsRow,
    Rows,
    WorkerRow,
    WorkerStatsRow,
    columns,
)
from clusterwatch.reporter.monitor_surface import CANDIDATE_WINDOW_S, LIVE_STATUSES

# Workers updated in the last 24 hours (every window the builder counts in: started, ended,
# submitted, not finished) or still live, whenever updated (live and overdue). Bounded:
# newest first, so a harvester with more rows than this loses its oldest live ones.
WORKER_LIMIT = 100_000
WORKER_WINDOW = dt.timedelta(seconds=CANDIDATE_WINDOW_S)
METRICS_WINDOW = dt.timedelta(hours=1)  # the latest per login node; one every 5 minutes


def read_server_rows(database: PandaDatabase, harvester_id: str,
                     now: dt.datetime) -> ServerRows:
    """Every table's rows for `harvester_id` at `now`, or why a table could not be read."""
    try:
        connection = connect(database)
    except psycopg.Error as exc:
        failed = failure_of(exc)
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
            return failure_of(exc)
