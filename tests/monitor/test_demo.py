"""`clusterwatch monitor demo --check`: the whole demonstration, so that it cannot rot.

gunicorn, a private MariaDB, the reporter zipapp run for three harvesters, evaluate_alarms
with a loopback fake Slack, and the pages read as a logged-in operator. During the
PostgreSQL pass the monitor's database is a fresh one on that server.
"""

from __future__ import annotations

import io
import os
import re
import socket
import stat
from pathlib import Path

import pytest

from clusterwatch.demo import monitor as demo
from clusterwatch.demo.monitor_steps import DemoError
from clusterwatch.testing.mariadb import MariaDBMissing, binaries
from clusterwatch.testing.monitor_server import private_database

pytestmark = pytest.mark.integration


def _need_mariadb() -> None:
    try:
        binaries()
    except MariaDBMissing as missing:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true and {missing}", pytrace=False)
        pytest.skip(str(missing))


def test_it_brings_up_the_monitor_with_the_reporters_records_and_stops(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _need_mariadb()
    data_dir = tmp_path / "demo-data"
    with private_database(tmp_path) as database:
        status = demo.main(["--check", "--port", "0", "--data-dir", str(data_dir),
                            "--database-url", database["CLUSTERWATCH_DATABASE_URL"]])
    out, err = capsys.readouterr()
    assert status == 0, err
    for line in ("reporter: built", "reporter run 1 for pandaharvester01, pandaharvester02, "
                 "osgharvester03: posted", "reporter run 3", "pages: logged in as 'operator'; "
                 "5 pages answered 200", "checked: every page answered 200; stopping"):
        assert line in out
    # The alarm, through a real channel, names the harvester, the error class and the line.
    slack = [line for line in out.splitlines() if "Slack (a loopback fake) received" in line]
    assert slack and all(word in slack[0] for word in
                         ("pandaharvester02", "SSLError", "CERTIFICATE_VERIFY_FAILED"))
    # Host tokens live only in the reporters' environment files, mode 600.
    for env_file in data_dir.glob("harvesters/*/reporter.env"):
        assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
        token = re.search(r"^SWF_REPORT_TOKEN=(.+)$", env_file.read_text(), re.M)
        assert token and token.group(1) not in out + err
    assert len(list(data_dir.glob("harvesters/*/reporter.env"))) == 3
    assert stat.S_IMODE(data_dir.stat().st_mode) == 0o700
    # gunicorn and MariaDB are down.
    port = int(re.search(r"on http://127\.0\.0\.1:(\d+)", out).group(1))  # type: ignore[union-attr]
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=2):
        pass
    assert not (data_dir / "mariadb" / "mysqld.pid").exists()


def test_it_remakes_its_own_directory_and_never_touches_another(tmp_path: Path) -> None:
    mine = demo.fresh_data_dir(tmp_path / "mine")
    (mine / "old-run.txt").write_text("from the previous demo")
    assert demo.fresh_data_dir(mine) == mine and not (mine / "old-run.txt").exists()
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "precious.txt").write_text("not the demo's")
    with pytest.raises(DemoError, match="was not made by the demo"):
        demo.fresh_data_dir(foreign)
    assert (foreign / "precious.txt").exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    assert demo.fresh_data_dir(empty) == empty


def test_it_says_when_its_port_is_taken(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]
        out = io.StringIO()
        with pytest.raises(DemoError, match=f"127.0.0.1:{port} is in use"):
            demo.run(tmp_path / "d", port, out, check=True)


def test_it_names_what_is_missing_before_starting_anything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from clusterwatch.demo import monitor_steps as demo_steps

    def no_mariadb() -> None:
        raise MariaDBMissing("mariadbd not found; install it with: sudo apt-get install ...")

    monkeypatch.setattr(demo_steps, "binaries", no_mariadb)
    assert demo.main(["--check", "--port", "0", "--data-dir", str(tmp_path / "d")]) == 1
    assert capsys.readouterr().err == (
        "clusterwatch monitor demo: mariadbd not found; install it with: sudo apt-get "
        "install ...\n")
    assert not (tmp_path / "d").exists()
