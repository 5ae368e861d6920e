"""The steps of `clusterwatch monitor demo`, each a real component run as it runs in
production: gunicorn, management commands, MariaDB, the reporter zipapp. See monitor.py."""

from __future__ import annotations

import contextlib
import json
import secrets
import socket
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Optional

from clusterwatch.loopback import harvester_scenario as scenario
from clusterwatch.loopback.harvester_files import harvester_file
from clusterwatch.loopback.harvester_scenario import Harvester
from clusterwatch.loopback.http_recorder import SLACK_WEBHOOK_PATH, HttpRecorder, fake_slack
from clusterwatch.loopback.mariadb import MariaDB, MariaDBMissing, binaries, mariadb_server
from clusterwatch.loopback.monitor_client import Session
from clusterwatch.loopback.monitor_server import MonitorServer, MonitorStartError, monitor_server
from clusterwatch.loopback.programs import ProgramFailed, run_program
from clusterwatch.loopback.services import LOOPBACK

REPORTER_TIMEOUT_S = 120
# The harvesters' activity between two reporter runs (cron would leave five minutes):
# short, so the demo is quick, and real, so every time in a record lies in its interval.
INTERVAL_S = 4.0
PUSHED_JOB = 6723451  # pushed to a worker in pandaharvester01's fixture submitter log


class DemoError(Exception):
    """A step of the demo failed; the message says which and why."""


@contextlib.contextmanager
def monitor(data_dir: Path, port: int, database: Optional[Mapping[str, str]],
            environ: Mapping[str, str], out: IO[str]) -> Iterator[MonitorServer]:
    """`migrate`, then gunicorn with two workers on 127.0.0.1:`port` (0: a free port), with
    the settings in `environ` (the usage reports' sources)."""
    check_port_free(port)
    try:
        with monitor_server(data_dir / "monitor", database=database, port=port or None,
                            workers=2, extra_environ=environ) as server:
            where = (database or {}).get("CLUSTERWATCH_DATABASE_URL", "").split("@")[-1] \
                or f"SQLite {data_dir / 'monitor' / 'monitor.sqlite3'}"
            out.write(f"  monitor: migrated ({where}); gunicorn, 2 workers, on {server.url}, "
                      f"log {server.log_path}\n")
            yield server
    except MonitorStartError as exc:
        raise DemoError(str(exc)) from None


def check_port_free(port: int) -> None:
    """DemoError when `port` (not 0: any free port) is taken on 127.0.0.1."""
    if not port:
        return
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        # As gunicorn binds: a port left in TIME_WAIT by an earlier demo counts as free.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((LOOPBACK, port))
        except OSError:
            raise DemoError(f"{LOOPBACK}:{port} is in use (an earlier demo still running?); "
                            "stop it, or pass --port N (0: any free port)") from None


def check_prerequisites() -> None:
    """Before anything starts: the MariaDB server and the shipped harvester files are here."""
    try:
        binaries()
        harvester_file("logs", "new")
    except (MariaDBMissing, FileNotFoundError) as exc:
        raise DemoError(str(exc)) from None


def create_accounts(server: MonitorServer, staff: Mapping[str, bool]) -> dict[str, str]:
    """Demo logins, each with a fresh password (returned), staff as `staff` says; one
    `manage shell` run, the passwords in its environment, never its argv."""
    passwords = {name: secrets.token_urlsafe(12) for name in staff}
    accounts = [[name, passwords[name], staff[name]] for name in staff]
    server.manage("shell", "-c", _CREATE_ACCOUNTS,
                  extra_environ={"CLUSTERWATCH_DEMO_ACCOUNTS": json.dumps(accounts)})
    return passwords


_CREATE_ACCOUNTS = (  # run by `clusterwatch monitor shell -c`
    "import json, os\n"
    "from django.contrib.auth import get_user_model\n"
    "for name, password, staff in json.loads(os.environ['CLUSTERWATCH_DEMO_ACCOUNTS']):\n"
    "    get_user_model().objects.create_user(name, password=password, is_staff=staff)\n"
)


def create_token(server: MonitorServer, key: str) -> str:
    """A host token for `key`: `create_host_token` prints it as its last line."""
    done = server.manage("create_host_token", key, "--note", "clusterwatch monitor demo")
    lines = done.stdout.strip().splitlines()
    if not lines:
        raise DemoError("create_host_token printed no token")
    return lines[-1].strip()


def harvesters(data_dir: Path) -> list[Harvester]:
    return scenario.harvesters(data_dir / "harvesters")


@contextlib.contextmanager
def mariadb(data_dir: Path, hosts: Sequence[Harvester], out: IO[str]) -> Iterator[MariaDB]:
    """A private MariaDB holding the harvesters' databases; every host's files set up."""
    password = secrets.token_urlsafe(16)
    with contextlib.ExitStack() as stack:
        try:
            db = stack.enter_context(mariadb_server(data_dir / "mariadb"))
            now = time.time()
            for host in hosts:
                scenario.set_up(host, db if host.schema else None, password, now)
        except (RuntimeError, FileNotFoundError) as exc:  # a server or a fixture missing
            raise DemoError(str(exc)) from None
        schemas = ", ".join(host.schema for host in hosts if host.schema)
        out.write(f"  MariaDB on {LOOPBACK}:{db.port}: harvester databases {schemas} "
                  "(fixture rows relative to now)\n")
        yield db


def build_reporter(data_dir: Path, out: IO[str]) -> Path:
    app = data_dir / "harvester-reporter.pyz"
    _run([sys.executable, "-m", "clusterwatch", "reporter", "build", "--output", str(app)],
         "clusterwatch reporter build")
    out.write(f"  reporter: built {app} with `clusterwatch reporter build`\n")
    return app


def report(app: Path, hosts: Sequence[Harvester], db: MariaDB, data_dir: Path, rounds: int,
           out: IO[str]) -> None:
    """Runs the zipapp for every host `rounds` times; in between, the harvesters write
    log lines and database rows dated within that (short, real) interval."""
    volumes = ["/", str(data_dir)]
    for number in range(rounds):
        if number:
            start = time.time()
            for host in hosts:
                scenario.interval(host, db, start, start + INTERVAL_S, number)
            time.sleep(max(0.0, start + INTERVAL_S + 0.2 - time.time()))
        for host in hosts:
            _run([sys.executable, str(app), *host.reporter_args(volumes)],
                 f"the reporter for {host.key}", timeout=REPORTER_TIMEOUT_S)
        what = "the first run only sets log positions" if number == 0 else \
            f"{INTERVAL_S:g} s of harvester log lines and ended workers since the last run"
        out.write(f"  reporter run {number + 1} for {', '.join(h.key for h in hosts)}: "
                  f"posted ({what})\n")


@contextlib.contextmanager
def alarm_channel(server: MonitorServer) -> Iterator[HttpRecorder]:
    """A loopback fake Slack as the monitor's one alarm channel (alarms.toml in its data
    directory, the webhook URL in a mode-600 file beside it, as in production)."""
    data_dir = Path(server.environ["CLUSTERWATCH_DATA_DIR"])
    with fake_slack() as slack:
        scenario.write_private(data_dir / "slack_webhook", slack.url + SLACK_WEBHOOK_PATH + "\n")
        (data_dir / "alarms.toml").write_text(
            '[[channels]]\ntype = "slack"\nname = "demo-slack"\n'
            'webhook_file = "slack_webhook"\n', encoding="utf-8")
        yield slack


def evaluate_alarms(server: MonitorServer, slack: HttpRecorder, out: IO[str]) -> None:
    """`evaluate_alarms` once, then what the fake Slack received."""
    if server.manage("help", "evaluate_alarms", check=False).returncode != 0:
        out.write("  alarms: this monitor has no evaluate_alarms command yet; skipped\n")
        return
    done = server.manage("evaluate_alarms")
    out.write("  clusterwatch monitor evaluate_alarms:\n")
    printed = done.stdout.strip().splitlines()
    logged = [line for line in done.stderr.strip().splitlines() if line not in printed]
    for line in printed + logged or ["(no output)"]:
        out.write(f"    {line}\n")
    for request in slack.requests:
        for line in str(request.json().get("text", "")).splitlines():
            out.write(f"  Slack (a loopback fake) received: {line}\n")


def pages(server: MonitorServer, hosts: Sequence[Harvester]) -> list[tuple[str, str]]:
    broken = next(host for host in hosts if host.broken)
    old = next(host for host in hosts if host.generation == "old")
    return [
        ("/hosts/", "every harvester: its last record's age, failed sources, backlog"),
        ("/queues/BNL_PanDA_1/", f"two harvesters; {broken.key} fails every fetch "
                                 "(SSLError, CERTIFICATE_VERIFY_FAILED)"),
        (f"/queues/{broken.queues[-1]}/", f"served by {broken.key} alone: gets no work"),
        (f"/queues/{old.queues[0]}/", f"{old.key}, the 2020 harvester generation"),
        (f"/jobs/{PUSHED_JOB}/", "a job the submitter pushed to a worker"),
    ]


def check_pages(server: MonitorServer, urls: Sequence[tuple[str, str]],
                hosts: Sequence[Harvester], username: str, password: str,
                out: IO[str]) -> None:
    """Logs in as the operator; every page must answer 200, the failing queue name SSLError."""
    session = Session(server.url)
    try:
        session.login(username, password)
    except AssertionError as exc:
        raise DemoError(str(exc)) from None
    broken = next(host for host in hosts if host.broken)
    for url, _ in urls:
        status, body = session.get(url)
        if status != 200:
            raise DemoError(f"{server.url}{url} answered {status}, not 200")
        text = body.decode("utf-8", "replace")
        if url.startswith("/queues/") and broken.queues[-1] in url and "SSLError" not in text:
            raise DemoError(f"{url} does not name the error class SSLError")
        if url == "/hosts/" and not all(host.key in text for host in hosts):
            raise DemoError("/hosts/ does not list every harvester")
    out.write(f"  pages: logged in as {username!r}; {len(urls)} pages answered 200\n")


def _run(command: list[str], what: str, timeout: float = 300) -> None:
    try:
        run_program(command, what, timeout)
    except ProgramFailed as exc:
        raise DemoError(str(exc)) from None
