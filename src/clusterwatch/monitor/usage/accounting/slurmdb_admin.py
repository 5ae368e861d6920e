"""What `create_slurmdb_view` does in the database, as an administrator: the schema, the
view, the read-only user and its one grant. Every step can be run again (the command is
idempotent): the view is replaced, the user's password reset, its grants set anew.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from clusterwatch.monitor.usage.accounting.slurmdb_sql_view import (
    VIEW,
    account_name,
    create_view_sql,
    identifier,
    slurm_tables,
)


class MissingTables(Exception):
    """Slurm's tables of this cluster are not in the database (a wrong --cluster)."""


@dataclass(frozen=True)
class ViewRequest:
    database: str  # Slurm's accounting database, e.g. slurm_acct_db
    cluster: str  # ClusterName of slurm.conf: the tables are <cluster>_job_table, ...
    schema: str  # where the view goes, e.g. clusterwatch_usage
    view_user: str
    view_host: str

    def __post_init__(self) -> None:  # ValueError before anything touches the database
        identifier(self.database, "--database")
        identifier(self.cluster, "--cluster")
        identifier(self.schema, "--schema")
        account_name(self.view_user, self.view_host)

    @property
    def view(self) -> str:
        return f"{self.schema}.{VIEW}"

    @property
    def account(self) -> str:
        return f"'{self.view_user}'@'{self.view_host}'"


@dataclass(frozen=True)
class ViewResult:
    user_existed: bool  # True: its password was reset and its grants replaced


def create_view(connection: Any, request: ViewRequest, password: str) -> ViewResult:
    """Create or replace the view and the user with SELECT on it only. Raises MissingTables,
    pymysql.MySQLError (the server refused or failed)."""
    with connection.cursor() as cursor:
        _check_tables(cursor, request)
        cursor.execute(f"CREATE DATABASE IF NOT EXISTS `{request.schema}`")
        cursor.execute(create_view_sql(request.database, request.cluster, request.schema))
        user, host = request.view_user, request.view_host
        cursor.execute("SELECT COUNT(*) FROM mysql.user WHERE User = %s AND Host = %s",
                       (user, host))
        existed = bool(cursor.fetchone()[0])
        # PyMySQL fills in %s on the client, quoted: user, host and hash are literals. The
        # server is sent the password's hash, never the password: a statement is visible
        # in SHOW PROCESSLIST (to any account with PROCESS) and in the general and slow
        # query logs, and the hash is what mysql.user keeps anyway.
        verb = "ALTER USER" if existed else "CREATE USER"
        cursor.execute(f"{verb} %s@%s {_hashed_clause(connection)}",
                       (user, host, native_password_hash(password)))
        # Whatever the user could do before (an earlier grant by hand) is taken away.
        cursor.execute("REVOKE ALL PRIVILEGES, GRANT OPTION FROM %s@%s", (user, host))
        cursor.execute(f"GRANT SELECT ON `{request.schema}`.`{VIEW}` TO %s@%s", (user, host))
    return ViewResult(user_existed=existed)


def native_password_hash(password: str) -> str:
    """The hash mysql_native_password stores: '*' and the upper-case hex of
    SHA1(SHA1(password)). Computed here so that the password itself never reaches the
    server."""
    inner = hashlib.sha1(password.encode("utf-8")).digest()  # noqa: S324 (the plugin's hash)
    return "*" + hashlib.sha1(inner).hexdigest().upper()  # noqa: S324


def _hashed_clause(connection: Any) -> str:
    """How this server takes a stored hash: MariaDB (Slurm's usual database) has
    IDENTIFIED BY PASSWORD; MySQL 5.7 and 8.0 name the plugin. A MySQL without
    mysql_native_password (8.4 by default, 9) refuses the statement with its own error; the
    command never falls back to sending the password."""
    version = str(getattr(connection, "get_server_info", lambda: "")())
    if "mariadb" in version.lower() or not version:
        return "IDENTIFIED BY PASSWORD %s"
    return "IDENTIFIED WITH mysql_native_password AS %s"


def _check_tables(cursor: Any, request: ViewRequest) -> None:
    wanted = slurm_tables(request.cluster)
    cursor.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = %s "
        "AND table_name IN (%s, %s, %s)", (request.database, *wanted))
    found = {str(row[0]) for row in cursor.fetchall()}
    missing = [name for name in wanted if name not in found]
    if missing:
        raise MissingTables(
            f"{request.database} has no table {', '.join(missing)}: is --cluster the "
            "ClusterName of slurm.conf and --database slurmdbd.conf's StorageLoc?")
