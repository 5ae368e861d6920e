"""`clusterwatch monitor demo --check`: the whole demonstration, so that it cannot rot.

gunicorn, a private MariaDB, the reporter zipapp run for three harvesters, evaluate_alarms
with a loopback fake Slack, and the pages read as a logged-in operator; the usage reports of
a researcher's four jobs (a real Prometheus holding their backfilled series, a sacct
stand-in), every usage page read as the researcher and the staff page as the operator. Each
proof runs once per scripts/test: `--check` in process on SQLite; and the demo from a wheel
of this tree installed in a fresh virtual environment outside the checkout, as
`pip install 'clusterwatch[monitor]'` users run it, serving until Ctrl-C (in the PostgreSQL
pass, against a fresh database there through the psycopg that the extra installed).
"""

from __future__ import annotations

import io
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from clusterwatch.demo import monitor as demo
from clusterwatch.demo.monitor_steps import DemoError
from clusterwatch.loopback.mariadb import MariaDBMissing, binaries
from clusterwatch.loopback.monitor_server import private_database
from clusterwatch.loopback.services import MissingComponent
from tests.components import need_binary, unavailable

pytestmark = pytest.mark.integration

CHECKOUT = Path(__file__).resolve().parents[2]
# pip builds the wheel and installs Django, gunicorn, psycopg and jsonschema into the new
# environment: a minute or two, more on a slow index.
PIP_TIMEOUT_S = 900
DEMO_TIMEOUT_S = 600
STOP_DEADLINE_S = 300  # a deadline for the failure message only
# scripts/test sets it to 1 in the SQLite pass when its PostgreSQL pass follows.
POSTGRES_PASS_FOLLOWS = "CLUSTERWATCH_TESTS_POSTGRES_PASS_FOLLOWS"


def _need_mariadb() -> None:
    try:
        binaries()
    except MariaDBMissing as missing:
        unavailable(missing)
    need_binary("prometheus")
    need_binary("promtool")


# One line per job of the researcher, with the warnings its story is about.
USAGE_LINES = (
    r"job 81201 lattice-sim: CPU 9\d% of 4 CPUs; memory [\d.]+ GiB of 16\.0 GiB \(\d+%\); "
    r"no warning",
    r"job 81202 fit-models: CPU [23]\d% of 8 CPUs; .*; warnings: low_cpu_efficiency, "
    r"bursty_cpu",
    r"job 81203 align-reads: CPU (4[7-9]|5[0-3])% of 2 CPUs; .*; warnings: "
    r"low_cpu_efficiency, unbalanced_cores",
    r"job 81204 make-figures: CPU \d+% of 1 CPU; memory 1\d\d\.\d MiB of 8\.0 GiB \(2%\); "
    r"warnings: memory_over_request",
)


def _check_usage_output(out: str) -> None:
    for pattern in USAGE_LINES:
        assert re.search(pattern, out), pattern
    for line in ("backfilled with promtool", "is a stand-in for Slurm's sacct (this demo "
                 "runs no Slurm)", "usage pages: 13 pages, plots, the PDF and the API answered",
                 "log in as the researcher 'alice' with password", "/usage/users/alice/",
                 "/usage/jobs/81203/", "/pdf/81203", "/usage/staff/"):
        assert line in out, line


def test_it_brings_up_the_monitor_with_the_reporters_records_and_stops(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _need_mariadb()
    data_dir = tmp_path / "demo-data"
    # On the demo's own SQLite: the PostgreSQL pass runs the demo from the wheel instead.
    status = demo.main(["--check", "--port", "0", "--data-dir", str(data_dir)])
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
    _check_usage_output(out)
    # Host tokens live only in the reporters' environment files, mode 600.
    for env_file in data_dir.glob("harvesters/*/reporter.env"):
        assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
        token = re.search(r"^SWF_REPORT_TOKEN=(.+)$", env_file.read_text(), re.M)
        assert token and token.group(1) not in out + err
    assert len(list(data_dir.glob("harvesters/*/reporter.env"))) == 3
    assert stat.S_IMODE(data_dir.stat().st_mode) == 0o700
    _assert_servers_down(out, data_dir)
    # The stand-in and its data are the demo's own, in its private directory.
    assert stat.S_IMODE((data_dir / "accounting" / "sacct").stat().st_mode) == 0o700


def _assert_servers_down(out: str, data_dir: Path) -> None:
    """gunicorn and Prometheus (their ports, as the demo printed them) and MariaDB are down."""
    for server in ("gunicorn, 2 workers, on", "Prometheus on"):
        found = re.search(server + r" http://127\.0\.0\.1:(\d+)", out)
        assert found, server
        with pytest.raises(OSError), socket.create_connection(("127.0.0.1", int(found[1])),
                                                              timeout=2):
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


def _no_mariadb() -> None:
    raise MariaDBMissing("mariadbd not found; install it with: sudo apt-get install ...")


def _no_prometheus(name: str) -> str:
    raise MissingComponent(name, "install it with: sudo apt-get install prometheus")


@pytest.mark.parametrize(("patches", "message"), [
    ({"monitor_steps.binaries": _no_mariadb},
     "mariadbd not found; install it with: sudo apt-get install ..."),
    ({"monitor_steps.binaries": lambda: ("mariadbd", "install", "mariadb"),
      "usage_steps.require_binary": _no_prometheus},
     "prometheus not found on PATH; install it with: sudo apt-get install prometheus (the "
     "usage reports need it)"),
])
def test_it_names_what_is_missing_before_starting_anything(
    patches: dict[str, object], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str]
) -> None:
    for where, replacement in patches.items():
        monkeypatch.setattr(f"clusterwatch.demo.{where}", replacement)
    assert demo.main(["--check", "--port", "0", "--data-dir", str(tmp_path / "d")]) == 1
    assert capsys.readouterr().err == f"clusterwatch monitor demo: {message}\n"
    assert not (tmp_path / "d").exists()


def test_the_installed_command_names_a_missing_promtool_in_one_line(tmp_path: Path) -> None:
    _need_mariadb()
    # A PATH with MariaDB and Prometheus but no promtool.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for path in (*binaries(), shutil.which("prometheus")):
        assert path
        (bin_dir / Path(path).name).symlink_to(path)
    program = Path(sys.executable).with_name("clusterwatch")
    result = subprocess.run([str(program), "monitor", "demo", "--check", "--port", "0",
                             "--data-dir", str(tmp_path / "d")], capture_output=True, text=True,
                            timeout=120, env={**_outside_env(), "PATH": str(bin_dir)})
    assert result.returncode == 1, result.stderr
    assert result.stderr.startswith("clusterwatch monitor demo: promtool not found on PATH; ")
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert result.stdout == "" and not (tmp_path / "d").exists()


def _run(command: Sequence[str], what: str, *, cwd: Path, env: dict[str, str],
         timeout: float) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout, check=False, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        pytest.fail(f"{what} failed with status {done.returncode}:\n"
                    f"{(done.stdout + done.stderr)[-3000:]}", pytrace=False)
    return done


def _outside_env() -> dict[str, str]:
    """This environment without what would let the checkout or .venv leak into a child."""
    return {key: value for key, value in os.environ.items()
            if key not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")
            and not key.startswith(("CLUSTERWATCH_", "DJANGO_"))}


@pytest.fixture(scope="session")
def installed_elsewhere(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bin directory of a fresh virtual environment, outside the checkout, holding
    `clusterwatch[monitor]` installed from a wheel built of this tree (one per session)."""
    root = tmp_path_factory.mktemp("wheel")
    assert CHECKOUT not in root.parents
    # The wheel is built from a copy, so the build's egg-info and build/ never land in the
    # working tree that other checks are reading.
    source = root / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(CHECKOUT / name, source / name)
    shutil.copytree(CHECKOUT / "src", source / "src",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc"))
    env = _outside_env()
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir",
          str(root / "dist"), str(source)], "pip wheel", cwd=root, env=env,
         timeout=PIP_TIMEOUT_S)
    wheel = next((root / "dist").glob("clusterwatch-*.whl"))
    venv = root / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], "python -m venv", cwd=root, env=env,
         timeout=PIP_TIMEOUT_S)
    _run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet",
          f"{wheel}[monitor]"], "pip install clusterwatch[monitor]", cwd=root, env=env,
         timeout=PIP_TIMEOUT_S)
    return venv / "bin"


@dataclass(frozen=True)
class Served:
    """What the installed demo printed while it served, then after Ctrl-C."""

    out: str
    rest: str
    err: str
    returncode: int
    data_dir: Path
    database_url: str


@pytest.fixture(scope="module")
def served_from_the_wheel(request: pytest.FixtureRequest) -> Served:
    """The installed `clusterwatch monitor demo`, serving until Ctrl-C as a user runs it,
    then SIGINT: once per run of scripts/test (in its PostgreSQL pass, against a fresh
    database there, through the psycopg the extra installed; on SQLite where no such pass
    follows)."""
    if (os.environ.get(POSTGRES_PASS_FOLLOWS) == "1"
            and not os.environ.get("CLUSTERWATCH_DATABASE_URL", "").startswith("postgres")):
        pytest.skip("the wheel's demo runs once, in the PostgreSQL pass that follows")
    _need_mariadb()
    # Asked for only now: a pass that skips the proof builds and installs no wheel.
    installed_elsewhere: Path = request.getfixturevalue("installed_elsewhere")
    elsewhere = installed_elsewhere.parent.parent / "run"  # beside the environment
    elsewhere.mkdir()
    env = _outside_env()
    found = _run([str(installed_elsewhere / "python"), "-c",
                  "import clusterwatch.demo as d; print(d.__file__)"],
                 "import clusterwatch.demo", cwd=elsewhere, env=env, timeout=60)
    assert Path(found.stdout.strip()).is_relative_to(installed_elsewhere.parent)
    data_dir = elsewhere / "demo-data"
    command = [str(installed_elsewhere / "clusterwatch"), "monitor", "demo", "--port", "0",
               "--data-dir", str(data_dir)]
    with private_database(elsewhere) as database:
        url = database["CLUSTERWATCH_DATABASE_URL"]
        if not url.startswith("sqlite"):  # the PostgreSQL pass; elsewhere the demo's default
            command += ["--database-url", url]  # no password in it: that stays in a file
            env.update(database)
        env["PYTHONFAULTHANDLER"] = "1"  # a demo that hangs says where, on SIGABRT
        demo_run = subprocess.Popen(command, cwd=elsewhere, env=env, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL,
                                    preexec_fn=_sigint_as_in_a_terminal)
        # A deadline for a failure message only: a demo that never serves is killed, and
        # the readline below then sees the end of its output.
        watchdog = threading.Timer(DEMO_TIMEOUT_S, demo_run.kill)
        watchdog.start()
        try:
            assert demo_run.stdout is not None
            out = ""
            while "Serving until Ctrl-C" not in out:
                line = demo_run.stdout.readline()
                if not line:
                    pytest.fail(f"the installed demo ended before serving:\n{out}"
                                f"{demo_run.communicate()[1][-3000:]}", pytrace=False)
                out += line
            demo_run.send_signal(signal.SIGINT)
            try:  # its servers stop within about a minute (their SIGKILL timeouts)
                rest, err = demo_run.communicate(timeout=STOP_DEADLINE_S)
            except subprocess.TimeoutExpired:
                demo_run.send_signal(signal.SIGABRT)  # faulthandler prints where it waits
                try:
                    rest, err = demo_run.communicate(timeout=30)
                except subprocess.TimeoutExpired:
                    demo_run.kill()
                    rest, err = demo_run.communicate()
                pytest.fail(f"the installed demo did not stop within {STOP_DEADLINE_S} s of "
                            f"Ctrl-C:\n{rest[-2000:]}{err[-3000:]}", pytrace=False)
        finally:
            watchdog.cancel()
            if demo_run.poll() is None:
                demo_run.kill()
                demo_run.wait()
    return Served(out, rest, err, demo_run.returncode, data_dir, url)


def _sigint_as_in_a_terminal() -> None:
    """Ctrl-C's disposition as a terminal's shell gives it: a pytest-xdist worker ignores
    SIGINT, and a child inherits that (Python then installs no KeyboardInterrupt for it)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_it_runs_from_a_wheel_installed_outside_the_checkout(
        served_from_the_wheel: Served) -> None:
    served = served_from_the_wheel
    for line in ("reporter run 3 for pandaharvester01, pandaharvester02, osgharvester03: "
                 "posted", "pages: logged in as 'operator'; 5 pages answered 200"):
        assert line in served.out
    assert "Slack (a loopback fake) received" in served.out
    assert ("monitor: migrated (SQLite " in served.out) == served.database_url.startswith(
        "sqlite")
    # The usage reports too: the sacct stand-in runs the installed package, not the checkout.
    _check_usage_output(served.out)


def test_ctrl_c_stops_gunicorn_mariadb_and_prometheus(served_from_the_wheel: Served) -> None:
    served = served_from_the_wheel
    assert served.returncode == 0, served.err
    assert "stopped: gunicorn, MariaDB and Prometheus are down" in served.rest
    _assert_servers_down(served.out, served.data_dir)


@pytest.mark.parametrize("port", ["65536", "-1", "http"])
def test_a_bad_port_is_a_usage_error_of_the_installed_command(port: str, tmp_path: Path) -> None:
    program = Path(sys.executable).with_name("clusterwatch")
    result = subprocess.run([str(program), "monitor", "demo", "--check", "--port", port,
                             "--data-dir", str(tmp_path / "d")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr and "--port" in result.stderr
    assert not (tmp_path / "d").exists()


def test_a_data_dir_that_cannot_be_made_is_one_line_and_exit_1(tmp_path: Path) -> None:
    _need_mariadb()
    a_file = tmp_path / "a-file"
    a_file.write_text("not a directory")
    program = Path(sys.executable).with_name("clusterwatch")
    for data_dir in (a_file, a_file / "below"):
        result = subprocess.run([str(program), "monitor", "demo", "--check",
                                 "--data-dir", str(data_dir)],
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == 1, result.stderr
        assert "Traceback" not in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert str(data_dir) in result.stderr
    assert a_file.read_text() == "not a directory"
