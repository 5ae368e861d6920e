"""The monitor under gunicorn on 127.0.0.1, as it runs in production, for tests and the demo.

`monitor_server(data_dir)` runs `clusterwatch monitor migrate`, then gunicorn with the
settings the systemd unit runs (`clusterwatch.monitor.site.gunicorn_conf`; only the port, the
number of workers and a shorter graceful stop differ) on a free loopback port, waits until
`/accounts/login/` answers 200, and stops it
(SIGTERM, the graceful shutdown; SIGKILL to its process group, workers too, after a timeout)
when the block ends: started and stopped by the harness's supervisor (loopback/supervisor.py).
The server's environment is built from scratch for the CLUSTERWATCH_* part: the caller's own
CLUSTERWATCH_* variables never leak in, so a test names its database explicitly.

Clients: clusterwatch.loopback.monitor_client (`get`, an operator's `Session`).

`private_database(data_dir)` gives that database: SQLite in `data_dir`, or, during the
PostgreSQL test pass (CLUSTERWATCH_DATABASE_URL names a PostgreSQL server), a fresh database
on that server, dropped afterwards. `migrated_database(data_dir)` is one migrated, made once
for many: `private_database(..., template=...)` starts as its copy (a file copy, or `CREATE
DATABASE ... TEMPLATE`), which `monitor_server(..., migrate=False)` serves without a migrate.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from clusterwatch.loopback import supervisor
from clusterwatch.loopback.monitor_client import LOGIN_PATH
from clusterwatch.loopback.services import LOOPBACK, log_tail
from clusterwatch.monitor.core.database_url import sqlite_url

READY_PATH = LOGIN_PATH  # answers 200 once a worker serves Django
STARTUP_TIMEOUT = 60.0
STOP_TIMEOUT = 20.0  # SIGTERM is graceful for gunicorn: its workers finish their requests (10 s)
COMMAND_TIMEOUT = 300.0
LOG_TAIL_LINES = 40
# what clusterwatch-monitor.service runs
GUNICORN_CONFIG = "clusterwatch.monitor.site.gunicorn_conf"


class MonitorStartError(supervisor.ServiceStartError):
    """migrate failed, gunicorn exited or did not answer; the message ends with its output.

    `MonitorStartError(message)` (no reason): a management command's failure, `manage`'s.
    """

    def __init__(self, name: str, reason: Optional[str] = None, log_tail: str = "", *,
                 port_taken: bool = False, log_path: Optional[Path] = None) -> None:
        if reason is None:
            RuntimeError.__init__(self, name)
            self.name, self.reason, self.log_tail = "clusterwatch monitor", name, ""
            self.port_taken, self.log_path = False, None
            return
        super().__init__(name, reason, log_tail, port_taken=port_taken, log_path=log_path)


@dataclass(frozen=True)
class MonitorServer:
    """A running monitor: `url` is its base URL, e.g. http://127.0.0.1:40123."""

    url: str
    process: subprocess.Popen[bytes]
    environ: Mapping[str, str]
    log_path: Path

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    def manage(self, *arguments: str, check: bool = True, timeout: float = COMMAND_TIMEOUT,
               extra_environ: Optional[Mapping[str, str]] = None,
               ) -> subprocess.CompletedProcess[str]:
        """`clusterwatch monitor ARGUMENTS` with the server's settings; output captured."""
        return manage({**self.environ, **(extra_environ or {})}, *arguments, check=check,
                      timeout=timeout)

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        return log_tail(self.log_path, lines)


def monitor_environ(data_dir: Path, database: Optional[Mapping[str, str]] = None,
                    extra: Optional[Mapping[str, str]] = None) -> dict[str, str]:
    """The caller's environment without its CLUSTERWATCH_* and Django settings, plus
    CLUSTERWATCH_DATA_DIR=`data_dir`, `database` (CLUSTERWATCH_DATABASE_* entries; default
    SQLite in `data_dir`) and `extra`."""
    environ = {name: value for name, value in os.environ.items()
               if not name.startswith("CLUSTERWATCH_") and name != "DJANGO_SETTINGS_MODULE"}
    environ["CLUSTERWATCH_DATA_DIR"] = str(data_dir)
    environ["DJANGO_SETTINGS_MODULE"] = "clusterwatch.monitor.site.settings"
    environ.update(database or {})
    environ.update(extra or {})
    return environ


def manage(environ: Mapping[str, str], *arguments: str, check: bool = True,
           timeout: float = COMMAND_TIMEOUT) -> subprocess.CompletedProcess[str]:
    """Runs `clusterwatch monitor ARGUMENTS` (a real subprocess) in `environ`.

    With `check`, a non-zero status raises MonitorStartError carrying the output.
    """
    try:
        done = subprocess.run([sys.executable, "-m", "clusterwatch", "monitor", *arguments],
                              env=dict(environ), capture_output=True, text=True,
                              timeout=timeout, check=False, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise MonitorStartError(f"clusterwatch monitor {' '.join(arguments[:1])} did not "
                                f"finish within {timeout:g} s") from None
    if check and done.returncode != 0:
        raise MonitorStartError(
            f"clusterwatch monitor {arguments[0] if arguments else ''} failed with status "
            f"{done.returncode}:\n{_last_lines(done.stdout + done.stderr)}")
    return done


@contextlib.contextmanager
def monitor_server(
    data_dir: Path,
    *,
    database: Optional[Mapping[str, str]] = None,
    extra_environ: Optional[Mapping[str, str]] = None,
    workers: Optional[int] = 2,
    port: Optional[int] = None,
    startup_timeout: float = STARTUP_TIMEOUT,
    migrate: bool = True,
) -> Iterator[MonitorServer]:
    """The monitor migrated and served by gunicorn on 127.0.0.1 (`port`, default: a free one).

    `database`: CLUSTERWATCH_DATABASE_URL (and _PASSWORD_FILE) entries, default SQLite in
    `data_dir`; see `private_database`. `workers`: None for the shipped number. The gunicorn
    log is `data_dir/gunicorn.log`. `migrate=False` skips `migrate` for a database that is
    migrated already (`private_database(..., template=...)`, a copy of a migrated one).
    """
    data_dir = Path(data_dir)
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)  # the database and secret key
    environ = monitor_environ(data_dir, database, extra_environ)
    if migrate:
        manage(environ, "migrate", "--noinput", "-v", "0")
    log_path = data_dir / "gunicorn.log"

    def attempt(ports: supervisor.Ports) -> supervisor.Daemon:
        daemon = _start_gunicorn(environ, ports[0], workers, log_path)
        ready = supervisor.http_ok(f"http://{LOOPBACK}:{ports[0]}{READY_PATH}")
        supervisor.await_ready(daemon, ready, startup_timeout, error=MonitorStartError)
        return daemon

    # A port of the caller's is tried once; a free one again on another when it was taken.
    daemon = supervisor.on_free_ports(1, attempt, fixed=(port,) if port else None)
    with supervisor.running(daemon):
        yield MonitorServer(url=f"http://{LOOPBACK}:{daemon.port}", process=daemon.process,
                            environ=environ, log_path=log_path)


def _start_gunicorn(environ: Mapping[str, str], port: int, workers: Optional[int],
                    log_path: Path) -> supervisor.Daemon:
    import gunicorn

    command = [sys.executable, "-m", "gunicorn", f"--config=python:{GUNICORN_CONFIG}",
               "--bind", f"{LOOPBACK}:{port}", "--graceful-timeout", "10",
               "clusterwatch.monitor.site.wsgi:application"]
    if workers is not None:
        command[3:3] = ["--workers", str(workers)]
    if tuple(gunicorn.version_info) >= (25, 1):
        # Otherwise every instance shares ~/.gunicorn/gunicorn.ctl (tests run several).
        command.insert(3, "--no-control-socket")
    # Its own process group: SIGKILL after the graceful stop reaches its workers too.
    return supervisor.spawn("gunicorn", command, log_path, ports=(port,), env=environ,
                            append=True, process_group=True, stop_timeout=STOP_TIMEOUT)


@contextlib.contextmanager
def private_database(data_dir: Path, template: Optional[Mapping[str, str]] = None,
                     ) -> Iterator[dict[str, str]]:
    """CLUSTERWATCH_DATABASE_* settings for a database of the caller's own.

    SQLite at `data_dir/monitor.sqlite3`; during the PostgreSQL pass (this process's
    CLUSTERWATCH_DATABASE_URL is postgresql://) a fresh database on that same server, with
    the same credentials, dropped when the block ends.

    `template`: the settings of another private database (see `migrated_database`), which
    the new one starts as a copy of: a file copy on SQLite, `CREATE DATABASE ... TEMPLATE`
    on PostgreSQL (nothing may be connected to the template meanwhile). A copy of a migrated
    database needs no `migrate` of its own (seconds each).
    """
    url = os.environ.get("CLUSTERWATCH_DATABASE_URL", "")
    if not url.startswith(("postgresql:", "postgres:")):
        path = Path(data_dir).absolute() / "monitor.sqlite3"
        if template is not None:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            source = _template_name(template, "sqlite3", "SQLite")
            for suffix in ("", "-wal"):  # a WAL not checkpointed yet holds part of it
                if suffix == "" or Path(source + suffix).exists():
                    shutil.copyfile(source + suffix, str(path) + suffix)
        yield {"CLUSTERWATCH_DATABASE_URL": sqlite_url(path)}
        return
    password_file = os.environ.get("CLUSTERWATCH_DATABASE_PASSWORD_FILE", "")
    name = f"cw_{secrets.token_hex(6)}"
    base, _, query = url.partition("?")
    settings = {"CLUSTERWATCH_DATABASE_URL": base.rsplit("/", 1)[0] + "/" + name
                + (f"?{query}" if query else "")}
    if password_file:
        settings["CLUSTERWATCH_DATABASE_PASSWORD_FILE"] = password_file
    copied = ""
    if template is not None:
        copied = f' TEMPLATE "{_template_name(template, "postgresql", "PostgreSQL")}"'
    _admin_sql(url, password_file, f'CREATE DATABASE "{name}"{copied}')
    try:
        yield settings
    finally:
        _admin_sql(url, password_file, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextlib.contextmanager
def migrated_database(data_dir: Path) -> Iterator[dict[str, str]]:
    """A `private_database` with `clusterwatch monitor migrate` run on it: a template for
    `private_database(..., template=...)`, made once where many need an empty migrated
    database. Copy it; never serve it or write to it."""
    with private_database(data_dir) as settings:
        Path(data_dir).mkdir(mode=0o700, parents=True, exist_ok=True)  # the secret key
        manage(monitor_environ(data_dir, settings), "migrate", "--noinput", "-v", "0")
        yield settings


def _template_name(settings: Mapping[str, str], engine: str, kind: str) -> str:
    """The NAME (a SQLite file, a PostgreSQL database) of a template of the `engine` wanted."""
    from clusterwatch.monitor.core.database_url import parse

    entry: dict[str, Any] = parse(settings["CLUSTERWATCH_DATABASE_URL"])
    if not entry["ENGINE"].endswith(engine):
        raise ValueError(f"a {kind} database is copied from a {kind} template, not "
                         f"{entry['ENGINE']}")
    return str(entry["NAME"])


def _admin_sql(url: str, password_file: str, statement: str) -> None:
    import psycopg

    from clusterwatch.monitor.core.database_url import parse

    entry: dict[str, Any] = parse(url, password_file or None)
    with psycopg.connect(dbname="postgres", user=entry["USER"], password=entry["PASSWORD"],
                         host=entry["HOST"], port=entry["PORT"] or None, autocommit=True,
                         **entry["OPTIONS"]) as connection:
        connection.execute(statement)


def _last_lines(text: str, lines: int = LOG_TAIL_LINES) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])
