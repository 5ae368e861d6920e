"""The private PostgreSQL server: password over TCP, a clean stop, errors with the log, and
the `run` command that scripts/test's PostgreSQL pass uses."""

from __future__ import annotations

import os
import socket
import stat
import sys
from pathlib import Path

import psycopg
import pytest

from clusterwatch.loopback import postgres
from clusterwatch.loopback.postgres import (
    Postgres,
    PostgresMissing,
    PostgresStartError,
    find_bindir,
    postgres_server,
)
from clusterwatch.loopback.postgres import cli as postgres_cli
from clusterwatch.monitor.core.database_url import parse
from tests.components import unavailable

pytestmark = pytest.mark.integration


def _need_postgres() -> None:
    try:
        find_bindir()
    except PostgresMissing as missing:
        unavailable(missing)


@pytest.fixture
def server(loopback_postgres: Postgres) -> Postgres:
    """The session's server (tests/conftest.py), as every test that needs one gets it."""
    return loopback_postgres


def connect(server: Postgres, **changes: str) -> psycopg.Connection:
    entry = parse(server.url, str(server.password_file))
    settings = {"dbname": entry["NAME"], "user": entry["USER"], "password": entry["PASSWORD"],
                "host": entry["HOST"], "port": entry["PORT"], **changes}
    return psycopg.connect(**settings, connect_timeout=10)


def test_it_serves_the_database_over_tcp_with_the_password_file(server: Postgres) -> None:
    assert server.url == f"postgresql://clusterwatch@127.0.0.1:{server.port}/clusterwatch"
    assert stat.S_IMODE(server.password_file.stat().st_mode) == 0o600
    assert server.password_file.stat().st_uid == os.geteuid()
    with connect(server) as connection:
        user, superuser, database = connection.execute(
            "SELECT current_user, usesuper, current_database() FROM pg_user "
            "WHERE usename = current_user").fetchone()
    assert (user, superuser, database) == ("clusterwatch", True, "clusterwatch")
    assert server.environ() == {
        "CLUSTERWATCH_DATABASE_URL": server.url,
        "CLUSTERWATCH_DATABASE_PASSWORD_FILE": str(server.password_file)}


def test_it_refuses_a_wrong_password(server: Postgres) -> None:
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        connect(server, password="not-the-password")


def test_it_can_create_databases_for_django_tests(server: Postgres) -> None:
    server.psql("CREATE DATABASE scratch;")
    with connect(server, dbname="scratch") as connection:
        assert connection.execute("SELECT 1").fetchone() == (1,)
    server.psql("DROP DATABASE scratch;")


def test_it_listens_on_loopback_only(server: Postgres) -> None:
    assert "listen_addresses = '127.0.0.1'" in (server.data_dir / "postgresql.conf").read_text()
    assert server.psql("SHOW listen_addresses;").strip() == "127.0.0.1"


def test_it_stops_and_removes_its_directory() -> None:
    _need_postgres()
    with postgres_server() as running:
        base, port = running.base, running.port
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass
    assert not base.exists()
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=2):
        pass


def test_a_server_that_cannot_start_is_reported_with_its_log(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _need_postgres()
    monkeypatch.setattr(postgres, "_SETTINGS", postgres._SETTINGS + "no_such_setting = 1\n")
    made: list[Path] = []
    real_base_dir = postgres._base_dir
    monkeypatch.setattr(postgres, "_base_dir", lambda user: made.append(real_base_dir(user))
                        or made[-1])
    with pytest.raises(PostgresStartError) as raised, postgres_server():
        pass
    message = str(raised.value)
    assert "postgres did not start: exited with status 1" in message
    assert 'unrecognized configuration parameter "no_such_setting"' in message
    assert len(made) == 1 and not made[0].exists()  # nothing left behind


def test_run_gives_the_command_the_settings_and_returns_its_status(
    capfd: pytest.CaptureFixture[str],
) -> None:
    _need_postgres()
    script = ("import os, sys\n"
              "print(os.environ['CLUSTERWATCH_DATABASE_URL'])\n"
              "print(oct(os.stat(os.environ['CLUSTERWATCH_DATABASE_PASSWORD_FILE']).st_mode))\n"
              "sys.exit(3)\n")
    assert postgres_cli.main(["run", "--", sys.executable, "-c", script]) == 3
    out, err = capfd.readouterr()
    url, mode = out.split()
    assert url.startswith("postgresql://clusterwatch@127.0.0.1:")
    assert ":" not in url.split("//", 1)[1].split("@")[0]  # no password in the URL
    assert mode == "0o100600"
    assert "PostgreSQL" in err and "on 127.0.0.1:" in err


def test_run_without_postgresql_fails_or_skips_as_asked(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(postgres, "PG_ROOT", tmp_path / "none")
    monkeypatch.setenv("PATH", str(tmp_path))
    assert postgres_cli.main(["run", "--", "true"]) == 1
    assert "initdb and pg_ctl not found" in capfd.readouterr().err
    assert postgres_cli.main(["run", "--skip-missing", "--", "true"]) == 0
    assert "postgres: skipped: " in capfd.readouterr().err


def test_run_needs_a_command(capfd: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        postgres_cli.main(["run", "--"])
    assert exited.value.code == 2
    assert "run needs a command" in capfd.readouterr().err
