"""The PanDA server's database, read-only: the session every reader of it opens, and what a
failed read becomes.

Read-only three times over: the session's transactions default to READ ONLY (`SET SESSION
CHARACTERISTICS`), the readers open their transactions READ ONLY (REPEATABLE READ, so the
tables a reader reads in one are one snapshot), and nothing writes. Each statement has
`statement_timeout`, the connection a connect timeout: a slow server makes a table a failed
source, never a hung timer run or page. The readers: the remote record's harvester tables
(`remote.harvester_tables`), the job page's job tables (`panda_job_rows`) and the image
demand (`image_demand_views`).
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg.conninfo import make_conninfo
from psycopg.rows import dict_row

from clusterwatch.monitor.panda.panda_settings import PandaDatabase
from clusterwatch.monitor.panda.server_rows import SourceFailed

CONNECT_TIMEOUT_S = 10
STATEMENT_TIMEOUT_MS = 30_000
APPLICATION = "clusterwatch-remote-harvester"


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



def failure_of(exc: psycopg.Error) -> SourceFailed:
    """A driver error as the part it spoiled says it (its first line, no password)."""
    # The driver's first line names the server, the user or the relation, never a password;
    # the record names the table.
    lines = str(exc).strip().splitlines()
    return SourceFailed.of(type(exc)(lines[0]) if lines else exc)
