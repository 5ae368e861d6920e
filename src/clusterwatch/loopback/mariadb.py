"""A private MariaDB server: own data directory, Unix socket and loopback port.

Used by the reporter's tests and by the monitor's demonstration (a harvester database for
the real reporter to read).

`mariadb-install-db` makes a fresh data directory (about 1 s), `mariadbd` serves it as the
calling user (as root it needs `--user=root`), grant tables on: the tests log in as a user
with a password. The server's default time zone is not UTC on purpose (see DEFAULT_TIME_ZONE).
Root logs in through the private socket without a password, only to set things up.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from clusterwatch.loopback import supervisor

STARTUP_TIMEOUT = 60.0
STOP_TIMEOUT = 20.0
# A Unix socket's path holds at most 107 bytes (sun_path); a deeper base gets a short one.
_SOCKET_PATH_MAX = 100
# The harvester writes naive UTC through a session in the server's default zone, and the
# reporter reads in that same zone: a non-UTC default proves no conversion creeps in.
DEFAULT_TIME_ZONE = "+05:00"
_SEARCH = (os.environ.get("PATH", ""), "/usr/sbin", "/usr/local/sbin", "/usr/libexec",
           "/usr/local/mysql/bin")
INSTALL_HINT = (
    "install it with: sudo apt-get install --no-install-recommends mariadb-server "
    "mariadb-client (scripts/setup installs them)"
)

# The harvester's column lists (PandaQueueSpec, WorkSpec, ServiceMetricSpec), spec types.
PQ_COLUMNS = (
    "queueName:text / index", "nQueueLimitJob:integer", "nQueueLimitWorker:integer",
    "maxWorkers:integer", "jobFetchTime:timestamp / index", "submitTime:timestamp / index",
    "lockedBy:text", "siteName:text / index", "jobType:text", "resourceType:text",
    "nNewWorkers:integer", "uniqueName:text primary key", "nQueueLimitJobRatio:integer",
    "nQueueLimitJobMax:integer", "nQueueLimitJobMin:integer", "nQueueLimitWorkerRatio:integer",
    "nQueueLimitWorkerMax:integer", "nQueueLimitWorkerMin:integer",
)
WORK_COLUMNS = (
    "workerID:integer primary key", "batchID:text", "mapType:text", "queueName:text",
    "status:text / index", "hasJob:integer", "workParams:blob", "workAttributes:blob",
    "eventsRequestParams:blob", "eventsRequest:integer / index", "computingSite:text / index",
    "creationTime:timestamp", "submitTime:timestamp / index", "startTime:timestamp",
    "endTime:timestamp", "nCore:integer", "walltime:timestamp", "accessPoint:text",
    "modificationTime:timestamp / index", "lastUpdate:timestamp / index",
    "eventFeedTime:timestamp / index", "lockedBy:text", "postProcessed:integer", "nodeID:text",
    "minRamCount:integer", "maxDiskCount:integer", "maxWalltime:integer",
    "killTime:timestamp / index", "computingElement:text", "nJobsToReFill:integer / index",
    "logFilesToUpload:blob", "jobType:text", "resourceType:text", "nativeExitCode:integer",
    "nativeStatus:text", "diagMessage:varchar(500)", "nJobs:integer", "submissionHost:text",
    "configID:integer / index", "syncLevel:integer", "checkTime:timestamp",
    "ioIntensity:integer", "harvesterHost:text", "pilotType:text", "eventFeedLock:text",
    "errorCode:integer", "errorDiag:text",
)
SM_COLUMNS = ("creationTime:timestamp / index", "hostName:text", "metrics:blob")
CACHE_COLUMNS = ("mainKey:text primary key", "subKey:text", "data:blob", "lastUpdate:timestamp")


class MariaDBMissing(Exception):
    """No MariaDB server binaries on this machine."""


@dataclass
class MariaDB:
    process: subprocess.Popen[bytes]
    base: Path
    socket: Path
    port: int
    client: str

    def sql(self, script: str, database: Optional[str] = None) -> str:
        """Runs `script` as root through the private socket; its batch output."""
        return _root_sql(self.client, self.socket, script, database)

    def stop(self) -> None:
        supervisor.stop_process(self.process, STOP_TIMEOUT)


def find_binary(names: Sequence[str]) -> Optional[str]:
    for name in names:
        for directory in _SEARCH:
            found = shutil.which(name, path=directory)
            if found:
                return found
    return None


def binaries() -> tuple[str, str, str]:
    """(server, install-db, client) paths, or MariaDBMissing naming what lacks."""
    server = find_binary(("mariadbd", "mysqld"))
    install = find_binary(("mariadb-install-db", "mysql_install_db"))
    client = find_binary(("mariadb", "mysql"))
    missing = [name for name, path in (("mariadbd", server), ("mariadb-install-db", install),
                                       ("mysql", client)) if path is None]
    if missing:
        raise MariaDBMissing(f"{', '.join(missing)} not found; {INSTALL_HINT}")
    assert server and install and client
    return server, install, client


@contextlib.contextmanager
def mariadb_server(base: Path) -> Iterator[MariaDB]:
    """A running server under `base`, stopped (SIGTERM, then SIGKILL) when the block ends."""
    server, install, client = binaries()
    as_root = ["--user=root"] if os.geteuid() == 0 else []
    datadir = base / "data"
    base.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [install, "--no-defaults", f"--datadir={datadir}", "--skip-test-db",
         "--auth-root-authentication-method=normal", *as_root],
        capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"mariadb-install-db failed: {done.stdout[-2000:]}{done.stderr[-2000:]}")
    with contextlib.ExitStack() as cleanup:
        sock = base / "mysqld.sock"
        if len(os.fsencode(sock)) > _SOCKET_PATH_MAX:  # e.g. a deep pytest-xdist tmp_path
            short = tempfile.mkdtemp(prefix="cw-mariadb-")
            cleanup.callback(shutil.rmtree, short, ignore_errors=True)
            sock = Path(short) / "mysqld.sock"
        daemon = supervisor.start(
            "mariadbd", lambda ports: _command(server, base, datadir, sock, ports[0], as_root),
            base / "mariadbd.out", lambda ports: _ready(client, sock),
            startup_timeout=STARTUP_TIMEOUT, own_logs=[base / "error.log"],
            stop_timeout=STOP_TIMEOUT)
        db = MariaDB(process=daemon.process, base=base, socket=sock, port=daemon.port,
                     client=client)
        try:
            yield db
        finally:
            db.stop()


def _command(server: str, base: Path, datadir: Path, sock: Path, port: int,
             as_root: list[str]) -> list[str]:
    return [
        server, "--no-defaults", f"--datadir={datadir}", f"--socket={sock}", f"--port={port}",
        "--bind-address=127.0.0.1", f"--pid-file={base / 'mysqld.pid'}",
        f"--log-error={base / 'error.log'}", f"--tmpdir={base}", "--skip-log-bin",
        "--innodb-buffer-pool-size=32M", f"--default-time-zone={DEFAULT_TIME_ZONE}",
        *as_root,
    ]


def _ready(client: str, sock: Path) -> supervisor.Probe:
    """Root's `SELECT 1` through the private socket works."""
    def answers() -> bool:
        if not sock.exists():
            return False
        try:
            _root_sql(client, sock, "SELECT 1;")
        except (RuntimeError, subprocess.TimeoutExpired):
            return False
        return True

    return supervisor.Probe(answers, "no answer to SELECT 1 through its socket")


def _root_sql(client: str, sock: Path, script: str, database: Optional[str] = None) -> str:
    command = [client, "--no-defaults", f"--socket={sock}", "--user=root", "--batch",
               "--skip-column-names"]
    if database:
        command.append(f"--database={database}")
    done = subprocess.run(command, input=script, capture_output=True, text=True, timeout=60,
                          check=False)
    if done.returncode != 0:
        raise RuntimeError(f"mysql as root failed: {done.stderr.strip()}")
    return done.stdout


def sql_string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def text_literal(value: Optional[str]) -> str:
    """A text literal that needs no escaping and keeps UTF-8 whatever the client's charset."""
    return "NULL" if value is None else f"_utf8mb4 X'{value.encode().hex()}'"


def insert_sql(table: str, rows: Sequence[Mapping[str, Any]]) -> str:
    """INSERT statements for `rows` (column -> int, text or None), one per row."""
    statements = []
    for row in rows:
        values = ",".join(
            "NULL" if v is None else str(v) if isinstance(v, int) else text_literal(str(v))
            for v in row.values()
        )
        statements.append(f"INSERT INTO {table}({','.join(row)}) VALUES ({values});")  # noqa: S608
    return "\n".join(statements)


def create_table_sql(table: str, columns: Sequence[str]) -> str:
    """CREATE TABLE as the harvester's db_proxy makes it for engine = mariadb."""
    parts, indexes = [], []
    for attribute in columns:
        name, spec = attribute.split(":", 1)
        kind = spec.split("/")[0].strip()
        if kind == "timestamp":
            kind += " null"  # the harvester's: no automatic update
        for spec_type, mariadb_type in (("text", "varchar(256)"), ("blob", "longtext"),
                                        ("integer", "bigint")):
            if kind.startswith(spec_type):
                kind = kind.replace(spec_type, mariadb_type, 1)
        parts.append(f"{name} {kind}")
        if "/" in spec and "index" in spec.split("/")[-1].split():
            indexes.append(name)
    statements = [f"CREATE TABLE {table}({','.join(parts)});"]
    statements += [f"CREATE INDEX {table}_{name}_idx ON {table}({name});" for name in indexes]
    return "\n".join(statements)


def create_harvester_schema(db: MariaDB, schema: str, user: str, password: str,
                            tables: Sequence[str] = ("pq_table", "work_table", "sm_table",
                                                     "cache_table")) -> None:
    """The schema, its tables, and `user` with all rights on it (as the harvester's user)."""
    columns = {"pq_table": PQ_COLUMNS, "work_table": WORK_COLUMNS, "sm_table": SM_COLUMNS,
               "cache_table": CACHE_COLUMNS}
    db.sql(f"CREATE DATABASE {schema};")
    for host in ("localhost", "%"):
        db.sql(f"CREATE USER IF NOT EXISTS '{user}'@'{host}' IDENTIFIED BY {sql_string(password)};"
               f" GRANT ALL ON {schema}.* TO '{user}'@'{host}';")
    db.sql("\n".join(create_table_sql(table, columns[table]) for table in tables), schema)
