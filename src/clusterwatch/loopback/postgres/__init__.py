"""A private PostgreSQL server on 127.0.0.1 for tests, the PostgreSQL test pass and benchmarks.

`initdb` makes a fresh cluster in a temporary directory and the harness's supervisor
(loopback/supervisor.py) serves it on a free loopback port: `postgres` in the foreground as
our child, leading its own process group as `pg_ctl start` would start it (a Ctrl-C meant for
the command run against it does not reach it), ready when postmaster.pid says "ready" and the
port accepts connections, as `pg_ctl -w` waits. The block's end stops it (SIGINT, PostgreSQL's
fast shutdown; SIGKILL to the group after a timeout) and removes the directory. PostgreSQL
refuses to run as root, so under root the server runs as the `postgres` system user (Debian's
package creates it; initdb through `runuser`), in a directory that user owns.

The cluster's bootstrap superuser is `clusterwatch`, with a random password kept in a mode-600
file: clients connect over TCP with scram-sha-256, exactly as the monitor does in production
(`CLUSTERWATCH_DATABASE_URL` without a password plus `CLUSTERWATCH_DATABASE_PASSWORD_FILE`).
The private Unix socket trusts local connections, for `psql` setup only. Durability is off
(`fsync`, `synchronous_commit`, `full_page_writes`): the data is thrown away anyway.

    python -m clusterwatch.loopback.postgres run [--skip-missing] -- COMMAND [ARGS...]

starts a server, runs COMMAND with CLUSTERWATCH_DATABASE_URL and
CLUSTERWATCH_DATABASE_PASSWORD_FILE naming it, stops the server and exits with COMMAND's
status (scripts/test runs the monitor's tests this way; see cli.py and __main__.py).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from clusterwatch.loopback import supervisor
from clusterwatch.loopback.services import LOOPBACK

PG_ROOT = Path("/usr/lib/postgresql")  # Debian: /usr/lib/postgresql/<major>/bin
SUPERUSER = "clusterwatch"
DATABASE = "clusterwatch"
SYSTEM_USER = "postgres"  # who runs the server when we are root
START_TIMEOUT_S = 60
STOP_TIMEOUT_S = 30
LOG_TAIL_LINES = 30
INSTALL_HINT = ("install it with: sudo apt-get install --no-install-recommends postgresql "
                "(scripts/setup installs it)")
_SETTINGS = """
# clusterwatch.loopback.postgres: a private, throwaway server
listen_addresses = '127.0.0.1'
unix_socket_directories = '{socket_dir}'
fsync = off
synchronous_commit = off
full_page_writes = off
max_connections = 200
"""


class PostgresMissing(Exception):
    """No PostgreSQL server binaries (or, under root, no user to run them as)."""


class PostgresStartError(supervisor.ServiceStartError):
    """initdb or the server failed; the message ends with the tail of the server's log."""


@dataclass(frozen=True)
class Postgres:
    """A running private server. `url` names the `clusterwatch` database, without password."""

    base: Path
    bindir: Path
    port: int
    password_file: Path
    run_as: Optional[str]

    @property
    def data_dir(self) -> Path:
        return self.base / "data"

    @property
    def socket_dir(self) -> Path:
        return self.base / "socket"

    @property
    def log_path(self) -> Path:
        return self.base / "server.log"

    def url_for(self, database: str) -> str:
        return f"postgresql://{SUPERUSER}@{LOOPBACK}:{self.port}/{database}"

    @property
    def url(self) -> str:
        return self.url_for(DATABASE)

    def environ(self, database: str = DATABASE) -> dict[str, str]:
        """The monitor's settings for `database` on this server."""
        return {"CLUSTERWATCH_DATABASE_URL": self.url_for(database),
                "CLUSTERWATCH_DATABASE_PASSWORD_FILE": str(self.password_file)}

    def psql(self, sql: str, database: str = "postgres") -> str:
        """Runs `sql` as the superuser over the private socket; its unaligned output."""
        done = subprocess.run(
            [str(self.bindir / "psql"), "--no-psqlrc", "-X", "-q", "-A", "-t",
             "-v", "ON_ERROR_STOP=1", "-h", str(self.socket_dir), "-p", str(self.port),
             "-U", SUPERUSER, "-d", database],
            input=sql, capture_output=True, text=True, timeout=60, check=False,
            env={**os.environ, "PGCONNECT_TIMEOUT": "10"}, cwd=self.base)
        if done.returncode != 0:
            raise RuntimeError(f"psql failed: {done.stderr.strip()}")
        return done.stdout

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            return f"(server log unreadable: {exc.strerror})"
        return "\n".join(text.splitlines()[-lines:])


def find_bindir() -> Path:
    """The newest /usr/lib/postgresql/<major>/bin, else the directory of `pg_ctl` on PATH."""
    versions = []
    if PG_ROOT.is_dir():
        for entry in PG_ROOT.iterdir():
            if entry.name.isdigit() and (entry / "bin" / "initdb").exists():
                versions.append((int(entry.name), entry / "bin"))
    if versions:
        return max(versions)[1]
    pg_ctl = shutil.which("pg_ctl")
    if pg_ctl and Path(pg_ctl).with_name("initdb").exists():
        return Path(pg_ctl).parent
    raise PostgresMissing(f"PostgreSQL's initdb and pg_ctl not found under {PG_ROOT} or on "
                          f"PATH; {INSTALL_HINT}")


def _server_user() -> Optional[pwd.struct_passwd]:
    """None when we may run the server ourselves; the `postgres` account under root."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(SYSTEM_USER)
    except KeyError:
        raise PostgresMissing(f"running as root, PostgreSQL needs the {SYSTEM_USER!r} system "
                              f"user to run as; {INSTALL_HINT}") from None


def _base_dir(user: Optional[pwd.struct_passwd]) -> Path:
    """A fresh private directory; under root one the server's user can reach and owns."""
    parent = Path(tempfile.gettempdir())
    if user is not None and not _reachable_by_all(parent):
        parent = Path("/tmp")  # noqa: S108 - the one place every user can reach
    base = Path(tempfile.mkdtemp(prefix="cw-postgres-", dir=parent))
    if user is not None:
        os.chown(base, user.pw_uid, user.pw_gid)
    return base


def _reachable_by_all(path: Path) -> bool:
    return all(os.stat(p).st_mode & 0o001 for p in (path, *path.parents))


@contextlib.contextmanager
def postgres_server(keep: bool = False) -> Iterator[Postgres]:
    """A running server with an empty `clusterwatch` database; removed when the block ends."""
    bindir = find_bindir()
    user = _server_user()
    base = _base_dir(user)
    _leftovers[base] = None
    daemon: Optional[supervisor.Daemon] = None
    try:
        server = _init(base, bindir, user)
        server, daemon = _start(server, user)
        _leftovers[base] = daemon
        server.psql(f"CREATE DATABASE {DATABASE};")
        yield server
    finally:
        if daemon is not None:
            daemon.stop()
        if not keep:
            shutil.rmtree(base, ignore_errors=True)
        _leftovers.pop(base, None)


def _as_server_user(run_as: Optional[str], command: list[str]) -> list[str]:
    return command if run_as is None else ["runuser", "-u", run_as, "--", *command]


def _init(base: Path, bindir: Path, user: Optional[pwd.struct_passwd]) -> Postgres:
    run_as = user.pw_name if user is not None else None
    password = secrets.token_urlsafe(24)
    # initdb reads the superuser's password from a file; only the server's user may read it.
    initdb_password = base / "initdb-password"
    fd = os.open(initdb_password, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(password + "\n")
    socket_dir = base / "socket"
    socket_dir.mkdir(mode=0o700)
    if user is not None:
        os.chown(initdb_password, user.pw_uid, user.pw_gid)
        os.chown(socket_dir, user.pw_uid, user.pw_gid)
    # The client's copy belongs to whoever runs the tests, mode 600 as the monitor demands.
    password_file = base / "password"
    fd = os.open(password_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(password + "\n")
    server = Postgres(base=base, bindir=bindir, port=0, password_file=password_file,
                      run_as=run_as)
    done = subprocess.run(
        _as_server_user(run_as, [
            str(bindir / "initdb"), "-D", str(server.data_dir), "-U", SUPERUSER,
            f"--pwfile={initdb_password}", "--auth-local=trust", "--auth-host=scram-sha-256",
            "-E", "UTF8", "--no-locale", "--no-sync"]),
        capture_output=True, text=True, timeout=120, check=False, cwd=base)
    initdb_password.unlink()
    if done.returncode != 0:
        raise PostgresStartError("postgres", f"initdb failed with status {done.returncode}",
                                 _last_lines(done.stdout + done.stderr))
    with open(server.data_dir / "postgresql.conf", "a", encoding="utf-8") as conf:
        conf.write(_SETTINGS.format(socket_dir=socket_dir))
    return server


def _start(server: Postgres, user: Optional[pwd.struct_passwd],
           ) -> tuple[Postgres, supervisor.Daemon]:
    daemon = supervisor.start(
        "postgres",
        lambda ports: [str(server.bindir / "postgres"), "-D", str(server.data_dir),
                       "-p", str(ports[0])],
        server.log_path, lambda ports: _Ready(server.data_dir, ports[0]),
        startup_timeout=START_TIMEOUT_S, append=True, cwd=server.base, process_group=True,
        stop_signal=signal.SIGINT, stop_timeout=STOP_TIMEOUT_S,
        user=user.pw_uid if user is not None else None,
        group=user.pw_gid if user is not None else None, error=PostgresStartError)
    return Postgres(base=server.base, bindir=server.bindir, port=daemon.port,
                    password_file=server.password_file, run_as=server.run_as), daemon


class _Ready(supervisor.Probe):
    """What `pg_ctl -w` waits for: postmaster.pid names the server and says "ready"; and
    its port accepts connections."""

    def __init__(self, data_dir: Path, port: int) -> None:
        super().__init__(failure="not ready (postmaster.pid)")
        self.pid_file = data_dir / "postmaster.pid"
        self.port = port

    def check(self) -> bool:
        try:
            lines = self.pid_file.read_text(encoding="utf-8", errors="replace").splitlines()
        except FileNotFoundError:
            return False
        # Line 4 is the port, line 8 the postmaster's status (PostgreSQL 10 and later).
        if len(lines) < 8 or lines[3].strip() != str(self.port) or lines[7].strip() != "ready":
            self.last = f"status {lines[7].strip()!r}" if len(lines) >= 8 else "starting"
            return False
        return supervisor.tcp_accepts(self.port).check()


def _last_lines(text: str, lines: int = LOG_TAIL_LINES) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


# Servers whose block has not ended: the daemon once it started.
_leftovers: dict[Path, Optional[supervisor.Daemon]] = {}


@atexit.register
def _remove_leftovers() -> None:
    # A server whose block never ended (the interpreter is exiting): stop it, remove it.
    for base, daemon in list(_leftovers.items()):
        if daemon is not None:
            daemon.stop(timeout=5.0)
        shutil.rmtree(base, ignore_errors=True)
