"""What `create_slurmdb_view` does in the database, as an administrator: the schema, the
view, the read-only user and its one grant. Every step can be run again (the command is
idempotent): the view is replaced, the user's password reset, its grants set anew.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from clusterwatch.monitor.usage.slurmdb_view import (
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
        # PyMySQL fills in %s on the client, quoted: user, host and password are literals.
        verb = "ALTER USER" if existed else "CREATE USER"
        cursor.execute(f"{verb} %s@%s IDENTIFIED BY %s", (user, host, password))
        # Whatever the user could do before (an earlier grant by hand) is taken away.
        cursor.execute("REVOKE ALL PRIVILEGES, GRANT OPTION FROM %s@%s", (user, host))
        cursor.execute(f"GRANT SELECT ON `{request.schema}`.`{VIEW}` TO %s@%s", (user, host))
    return ViewResult(user_existed=existed)


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
