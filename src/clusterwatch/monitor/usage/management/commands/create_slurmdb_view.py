"""`clusterwatch monitor create_slurmdb_view --cluster NAME --password-file PATH [...]`.

Run once by a database administrator (again whenever wanted: it is idempotent): creates in
Slurm's accounting database (MariaDB) a view of the user-to-job mapping, in a schema of its
own, and a read-only user with SELECT on that view only; the user's new password goes to a
mode-600 file for the monitor (CLUSTERWATCH_SLURMDB_PASSWORD_FILE). No password is ever read
from or written to argv, the environment or the output.

Exit 0 done; 1 the database refused or failed (the server's message, one line); 78 a bad
option value or an unsafe or unreadable file (one line). docs/usage.md has the details.
"""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path
from typing import Any, Optional

import pymysql
from django.core.management.base import BaseCommand, CommandParser

from clusterwatch.atomic_write import write_atomically
from clusterwatch.errors import ConfigError, RunError
from clusterwatch.monitor.core.secrets import read_secret_file
from clusterwatch.monitor.usage.accounting.slurmdb_admin import (
    MissingTables,
    ViewRequest,
    ViewResult,
    create_view,
)
from clusterwatch.monitor.usage.accounting.slurmdb_connect import connect, server_message
from clusterwatch.monitor.usage.accounting.slurmdb_sql_view import DEFAULT_DATABASE, DEFAULT_SCHEMA

PASSWORD_BYTES = 32  # secrets.token_urlsafe: 43 characters, no quoting needed anywhere


class Command(BaseCommand):
    help = ("Create (or replace) the restricted view of Slurm's accounting database that the "
            "usage reports read, and a read-only database user with SELECT on it only; its "
            "new password is written to --password-file (mode 600), never shown.")
    requires_system_checks: list[str] = []  # touches Slurm's database, not the monitor's

    def create_parser(self, prog_name: str, subcommand: str, **kwargs: Any) -> CommandParser:
        # No abbreviations: `--admin-password SECRET` would be taken for the file option.
        parser = super().create_parser(prog_name, subcommand, allow_abbrev=False, **kwargs)
        plain_error = parser.error

        def error(message: str) -> None:
            # argparse repeats unknown arguments, and one may be a password typed in by hand.
            if message.startswith("unrecognized arguments"):
                message = ("unrecognized arguments (not repeated here: passwords are read "
                           "from files only)")
            plain_error(message)

        parser.error = error
        return parser

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--cluster", required=True,
                            help="ClusterName of slurm.conf (tables <cluster>_job_table, ...)")
        parser.add_argument("--password-file", required=True, type=Path,
                            help="where the read-only user's new password goes (mode 600)")
        parser.add_argument("--host", default="localhost", help="database host")
        parser.add_argument("--port", default=3306, type=int, help="database port")
        parser.add_argument("--socket", help="the server's Unix socket (instead of host/port)")
        parser.add_argument("--database", default=DEFAULT_DATABASE,
                            help="Slurm's accounting database (slurmdbd.conf's StorageLoc)")
        parser.add_argument("--schema", default=DEFAULT_SCHEMA,
                            help="the schema the view is created in (created when missing)")
        parser.add_argument("--admin-user",
                            help="administrator to log in as (default: the defaults file's "
                                 "user, else root)")
        parser.add_argument("--admin-password-file", type=Path,
                            help="the administrator's password, alone in a mode-600 file")
        parser.add_argument("--admin-defaults-file", type=Path,
                            help="a mysql option file, mode 600: its [client] user and "
                                 "password (options given here win over the file)")
        parser.add_argument("--view-user", default="clusterwatch_usage",
                            help="the read-only user to create")
        parser.add_argument("--view-user-host", default="localhost",
                            help="where the monitor connects from: a host, address or %% "
                                 "pattern")
        parser.add_argument("--timeout", default=30.0, type=float,
                            help="seconds to wait for the server at each step")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            request = ViewRequest(
                database=options["database"], cluster=options["cluster"],
                schema=options["schema"], view_user=options["view_user"],
                view_host=options["view_user_host"])
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        if not 0 < options["port"] < 65536:
            raise ConfigError(f"--port must be 1-65535, not {options['port']}")
        if not 0 < options["timeout"] <= 3600:
            raise ConfigError(f"--timeout must be 0-3600 seconds, not {options['timeout']:g}")
        target: Path = options["password_file"]
        _check_target(target)
        admin_password = _admin_password(options["admin_password_file"],
                                         options["admin_defaults_file"])
        password = secrets.token_urlsafe(PASSWORD_BYTES)
        result = self._create(request, options, admin_password, password)
        try:
            write_atomically(target, (password + "\n").encode(), mode=0o600)
        except OSError as exc:
            raise RunError(f"the password was reset but {target} could not be written "
                           f"({exc.strerror}); run the command again") from None
        self._report(request, result, target, options)

    def _create(self, request: ViewRequest, options: dict[str, Any],
                admin_password: Optional[str], password: str) -> ViewResult:
        secrets_ = (password, admin_password or "")
        try:
            defaults = options["admin_defaults_file"]
            connection = connect(
                host=options["host"], port=options["port"],
                user=options["admin_user"] or (None if defaults else "root"),
                password=admin_password, timeout_s=options["timeout"],
                unix_socket=options["socket"],
                defaults_file=str(defaults) if defaults else None)
            try:
                return create_view(connection, request, password)
            finally:
                connection.close()
        except MissingTables as exc:
            raise RunError(str(exc)) from None
        except pymysql.MySQLError as exc:
            raise RunError(f"database error: {server_message(exc, secrets_)}") from None

    def _report(self, request: ViewRequest, result: ViewResult, target: Path,
                options: dict[str, Any]) -> None:
        write = self.stdout.write
        write(f"view {request.view}: created or replaced over {request.database}."
              f"{request.cluster}_job_table (jobs, their user, account and resources)")
        if result.user_existed:
            write(f"user {request.account}: existed; its password was reset and its grants "
                  "replaced (restart the monitor so it reads the new password)")
        else:
            write(f"user {request.account}: created")
        write(f"grant: SELECT on {request.view} only")
        write(f"password: written to {target} (mode 600)")
        where = (f"{options['host']}:{options['port']}" if not options["socket"]
                 else f"localhost:{options['port']}")
        write(f"monitor settings: CLUSTERWATCH_ACCOUNTING=slurmdb CLUSTERWATCH_SLURMDB_URL="
              f"mysql://{request.view_user}@{where}/{request.schema} "
              f"CLUSTERWATCH_SLURMDB_PASSWORD_FILE={target}")


def _check_target(target: Path) -> None:
    """The password file may be replaced: a directory that exists, and no file there that
    others could read (it would have been exposed) and no symbolic link."""
    if not target.parent.is_dir():
        raise ConfigError(f"--password-file: directory {target.parent} does not exist")
    try:
        found = os.lstat(target)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise ConfigError(f"--password-file: cannot check {target}: {exc.strerror}") from None
    if not stat.S_ISREG(found.st_mode):
        raise ConfigError(f"--password-file: {target} is not a regular file; refusing to "
                          "replace it")
    if found.st_mode & 0o077:
        raise ConfigError(
            f"--password-file: {target} has mode {stat.S_IMODE(found.st_mode):o}, readable by "
            "others; refusing to write a password there (chmod 600 it or remove it)")


def _admin_password(password_file: Optional[Path],
                    defaults_file: Optional[Path]) -> Optional[str]:
    """The administrator's password from its file; None with a defaults file (PyMySQL reads
    it) or with neither (a login without password, e.g. root through the Unix socket)."""
    if password_file and defaults_file:
        raise ConfigError("give --admin-password-file or --admin-defaults-file, not both")
    for option, path in (("--admin-password-file", password_file),
                         ("--admin-defaults-file", defaults_file)):
        if path is not None and not path.exists():
            # Not named: a password typed where its file's path belongs would be shown.
            raise ConfigError(f"{option}: no such file (give the path of a mode-600 file "
                              "holding the password, never the password itself)")
    if password_file:
        return read_secret_file(str(password_file), "--admin-password-file")
    if defaults_file:
        try:
            mode = defaults_file.stat().st_mode
            with defaults_file.open("rb"):
                pass
        except OSError as exc:
            raise ConfigError(f"--admin-defaults-file: cannot read {defaults_file}: "
                              f"{exc.strerror}") from None
        if mode & 0o077:
            raise ConfigError(f"--admin-defaults-file {defaults_file} is readable by others "
                              f"(mode {stat.S_IMODE(mode):o}); chmod 600 it")
    return None
