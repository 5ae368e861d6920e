"""The job page's rows from the PanDA server's job tables: one read-only query per table.

The session is panda_db's (read-only, UTC, schema-qualified names), with a statement timeout
sized for a page rather than for the five-minute timer: a slow table becomes that table's
failure within PAGE_STATEMENT_TIMEOUT_MS, never a page that waits past gunicorn's worker
timeout. The pandaid is always a parameter. The three tables are read in one REPEATABLE READ
transaction, so a job the server moves between them is seen in one place (or both, never
neither); each in a savepoint, so a missing table fails alone.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any, Optional

import psycopg
from psycopg import sql

from clusterwatch.errors import ConfigError
from clusterwatch.monitor.panda.panda_db import connect, failure_of
from clusterwatch.monitor.panda.panda_job_truth import JOB_TABLES, JobRow, JobTruth, job_truth
from clusterwatch.monitor.panda.panda_settings import PandaDatabase, panda_database
from clusterwatch.monitor.panda.server_rows import Rows, columns

PAGE_STATEMENT_TIMEOUT_MS = 5_000
BIGINT_MAX = 2**63 - 1
ROWS_READ = 3  # a pandaid is one row per table; a bound all the same


def page_connection(database: PandaDatabase) -> psycopg.Connection[dict[str, Any]]:
    """panda_db's read-only session, its statements limited to PAGE_STATEMENT_TIMEOUT_MS."""
    connection = connect(database)
    try:  # a SET, not SET LOCAL: the session is in autocommit until a transaction opens
        connection.execute(sql.SQL("SET statement_timeout = {}").format(
            sql.Literal(PAGE_STATEMENT_TIMEOUT_MS)))
    except psycopg.Error:
        connection.close()
        raise
    return connection


def read_job_rows(database: PandaDatabase, pandaid: int) -> Mapping[str, Rows[JobRow]]:
    """Each job table's rows for `pandaid`, or why it could not be read."""
    try:
        connection = page_connection(database)
    except psycopg.Error as exc:
        return dict.fromkeys(JOB_TABLES, failure_of(exc))
    with connection, connection.transaction():
        return {table: _read(connection, database.schema, table, pandaid)
                for table in JOB_TABLES}


def _read(connection: psycopg.Connection[dict[str, Any]], schema: str, table: str,
          pandaid: int) -> Rows[JobRow]:
    query = sql.SQL("SELECT {columns} FROM {table} WHERE pandaid = %s LIMIT %s").format(
        columns=sql.SQL(", ").join(map(sql.Identifier, columns(JobRow))),
        table=sql.Identifier(schema, table))
    try:
        with connection.transaction():
            rows: list[Any] = connection.execute(query, (pandaid, ROWS_READ)).fetchall()
            return rows
    except psycopg.Error as exc:
        return failure_of(exc)


def server_truth(environ: Mapping[str, str], pandaid: int,
                 now: dt.datetime) -> Optional[JobTruth]:
    """The job page's section; None when CLUSTERWATCH_PANDA_DATABASE_URL is not set. A wrong
    setting is said on the page (the monitor serves its other pages all the same)."""
    try:
        database = panda_database(environ)
    except ConfigError as exc:
        return JobTruth(pandaid, None, [], f"configuration error: {exc}")
    if database is None:
        return None
    if pandaid > BIGINT_MAX:  # pandaid is a bigint: no such job, and no query to send
        return job_truth(pandaid, dict.fromkeys(JOB_TABLES, ()), now)
    return job_truth(pandaid, read_job_rows(database, pandaid), now)
