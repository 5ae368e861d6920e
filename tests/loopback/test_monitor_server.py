"""The gunicorn harness: the monitor migrated and served on loopback, stopped cleanly, and a
bad setting reported before anything is left running.

During scripts/test's PostgreSQL pass, `private_database` puts the served monitor on a fresh
database of that server, so these run against PostgreSQL too.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from clusterwatch.loopback.monitor_client import Session, get
from clusterwatch.loopback.monitor_server import (
    MonitorStartError,
    monitor_environ,
    monitor_server,
    private_database,
)

pytestmark = pytest.mark.integration


def test_it_serves_the_login_page_under_several_workers_and_stops(tmp_path: Path) -> None:
    with private_database(tmp_path) as database, \
            monitor_server(tmp_path, database=database, workers=2) as server:
        status, body = get(server.url + "/accounts/login/")
        assert status == 200 and b'name="password"' in body
        assert get(server.url + "/hosts/")[0] == 302  # operators log in first
        port, process = server.port, server.process
        assert server.environ["CLUSTERWATCH_DATA_DIR"] == str(tmp_path)
    assert process.poll() is not None
    log = server.log_path.read_text()
    assert log.count("Booting worker") == 2 and "Shutting down: Master" in log
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=2):
        pass


def test_its_management_commands_share_the_servers_database(tmp_path: Path) -> None:
    with private_database(tmp_path) as database, \
            monitor_server(tmp_path, database=database) as server:
        token = server.manage("create_host_token", "host01").stdout.strip().splitlines()[-1]
        status, _ = get(server.url + "/api/host-reports/host01/",
                        headers={"Authorization": f"Token {token}"})
        assert status == 404  # the token is good, the key has not reported yet
        password = "a-long-demo-passw0rd"
        server.manage("shell", "-c", "import os\nfrom django.contrib.auth.models import User\n"
                      "from clusterwatch.monitor.core.operators import set_operator\n"
                      "set_operator(User.objects.create_user('op', password=os.environ['PW']),"
                      " True)", extra_environ={"PW": password})
        session = Session(server.url)
        session.login("op", password)
        assert session.get("/hosts/")[0] == 200
        with pytest.raises(AssertionError, match="refused"):
            Session(server.url).login("op", "wrong")


def test_a_bad_database_url_fails_before_gunicorn_starts(tmp_path: Path) -> None:
    with pytest.raises(MonitorStartError) as raised, monitor_server(
        tmp_path, database={"CLUSTERWATCH_DATABASE_URL": "mysql://cw:hunter2@db/monitor"}
    ):
        pass
    message = str(raised.value)
    assert "clusterwatch monitor migrate failed with status 78" in message
    assert "CLUSTERWATCH_DATABASE_URL: unsupported scheme 'mysql'" in message
    assert "hunter2" not in message
    assert not (tmp_path / "gunicorn.log").exists()


def test_a_worker_that_cannot_boot_is_reported_with_the_log(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    import clusterwatch.loopback.monitor_server as harness

    # migrate works, then the WSGI module does not exist: gunicorn gives up.
    real = harness._start_gunicorn

    def broken(environ, port, workers, log_path):  # type: ignore[no-untyped-def]
        return real({**environ, "DJANGO_SETTINGS_MODULE": "no.such.settings"}, port,
                    workers, log_path)

    monkeypatch.setattr(harness, "_start_gunicorn", broken)
    with pytest.raises(MonitorStartError,
                       match=r"gunicorn did not start: exited with status \d+") as raised, \
            monitor_server(tmp_path, startup_timeout=30):
        pass
    assert "No module named 'no'" in str(raised.value)


def test_a_taken_port_is_reported(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(MonitorStartError, match="Connection in use"), \
                monitor_server(tmp_path, port=port, startup_timeout=30):
            pass


def test_its_environment_keeps_none_of_the_callers_monitor_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLUSTERWATCH_SECRET_KEY", "callers")
    monkeypatch.setenv("CLUSTERWATCH_DATABASE_URL", "sqlite:///elsewhere.sqlite3")
    environ = monitor_environ(tmp_path, {"CLUSTERWATCH_DATABASE_URL": "sqlite:///x"},
                              {"CLUSTERWATCH_DEBUG": "1"})
    assert {k: v for k, v in environ.items() if k.startswith("CLUSTERWATCH_")} == {
        "CLUSTERWATCH_DATA_DIR": str(tmp_path), "CLUSTERWATCH_DATABASE_URL": "sqlite:///x",
        "CLUSTERWATCH_DEBUG": "1"}
    assert environ["DJANGO_SETTINGS_MODULE"] == "clusterwatch.monitor.site.settings"
    assert environ["PATH"] == os.environ["PATH"]


def test_its_private_database_follows_the_postgresql_pass(tmp_path: Path) -> None:
    with private_database(tmp_path) as database:
        url = database["CLUSTERWATCH_DATABASE_URL"]
        if os.environ.get("CLUSTERWATCH_DATABASE_URL", "").startswith("postgresql:"):
            assert url.startswith("postgresql://") and url.rsplit("/", 1)[1].startswith("cw_")
            assert database["CLUSTERWATCH_DATABASE_PASSWORD_FILE"] == os.environ[
                "CLUSTERWATCH_DATABASE_PASSWORD_FILE"]
        else:
            assert url == f"sqlite://{tmp_path}/monitor.sqlite3"
