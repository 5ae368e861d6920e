"""Running `clusterwatch monitor create_slurmdb_view` against the real cluster's MariaDB, and
logging in as the users it makes, for the view and slurmdb source tests."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pymysql

from clusterwatch.loopback.mariadb import sql_string
from tests.components import unavailable
from tests.monitor.usage.real_slurm import RealJobs

ADMIN, ADMIN_PASSWORD = "cwadmin", "adm1n-Pa55word"


def console_script() -> str:
    """The installed `clusterwatch` beside this interpreter (missing: fails under CI)."""
    installed = Path(sys.executable).with_name("clusterwatch")
    if not installed.is_file():
        unavailable(f"no console script at {installed} (package not installed)")
    return str(installed)


def create_admin(jobs: RealJobs) -> None:
    """An administrator with a password, as a site's DBA would log in (idempotent)."""
    jobs.cluster.accounting.database.sql("".join(
        f"CREATE USER IF NOT EXISTS '{ADMIN}'@'{host}' IDENTIFIED BY "
        f"{sql_string(ADMIN_PASSWORD)}; GRANT ALL ON *.* TO '{ADMIN}'@'{host}' "
        "WITH GRANT OPTION;" for host in ("localhost", "127.0.0.1")))


def secret_file(path: Path, text: str, mode: int = 0o600) -> Path:
    path.write_text(text)
    path.chmod(mode)
    return path


@dataclass(frozen=True)
class Run:
    returncode: int
    stdout: str
    stderr: str


def create_view(jobs: RealJobs, tmp_path: Path, *options: str, admin: bool = True,
                timeout: float = 120) -> Run:
    """The command as an administrator runs it: a real process, settings from a clean
    environment, the admin's password from a mode-600 file (unless `admin` is False)."""
    db = jobs.cluster.accounting.database
    argv = [console_script(), "monitor", "create_slurmdb_view",
            "--host", "127.0.0.1", "--port", str(db.port)]
    if admin:
        argv += ["--admin-user", ADMIN, "--admin-password-file",
                 str(secret_file(tmp_path / "admin-password", ADMIN_PASSWORD + "\n"))]
    if "--cluster" not in options:
        argv += ["--cluster", jobs.cluster.cluster_name]
    env = {name: value for name, value in os.environ.items()
           if not name.startswith(("CLUSTERWATCH_", "MYSQL")) and name != "DJANGO_SETTINGS_MODULE"}
    env["CLUSTERWATCH_DATA_DIR"] = str(tmp_path / "data")
    done = subprocess.run([*argv, *options], env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)
    return Run(done.returncode, done.stdout, done.stderr)


@contextlib.contextmanager
def silent_port() -> Iterator[int]:
    """A port that takes connections (the kernel's backlog) and never says a word."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield listener.getsockname()[1]


def login(jobs: RealJobs, user: str, password: str, **options: Any) -> Any:
    """A PyMySQL connection over TCP, as the monitor makes it."""
    return pymysql.connect(host="127.0.0.1", port=jobs.cluster.accounting.database.port,
                           user=user, password=password, connect_timeout=10,
                           autocommit=True, **options)


def rows(connection: Any, query: str, *args: object) -> list[tuple[Any, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(query, args or None)
        return list(cursor.fetchall())
