"""`clusterwatch monitor demo`: the monitor with records made by the project's own parts.

Nothing here is a hand-written record. The demo migrates a private SQLite database, creates
an operator account and one host token per harvester (each written only to that harvester's
reporter environment file, mode 600), serves the monitor under gunicorn on 127.0.0.1, starts
a private MariaDB holding two harvester databases, builds the reporter zipapp with
`clusterwatch reporter build`, and runs it (a real subprocess posting over HTTP to the
monitor) three times for three harvester hosts, appending harvester log lines and database
rows between runs (see clusterwatch.loopback.harvester_scenario). It then runs
`evaluate_alarms` once, prints the pages to open, and serves until Ctrl-C, when gunicorn,
MariaDB and Prometheus stop. `--check` verifies that the pages answer and exits instead of
serving.

The usage reports are on (usage_steps): a real Prometheus, started before gunicorn, holds
the job exporter's series of a researcher's four jobs (usage_jobs), backfilled with
promtool; a sacct stand-in (sacct_standin) is the accounting, since the demo runs no Slurm.
The researcher `alice` logs in to her jobs' pages; the operator is staff.

The data directory (default ./demo-data) is made afresh on each run; a directory that does
not carry the demo's marker file is never deleted.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import FrameType
from typing import IO, Optional

from clusterwatch.demo import monitor_steps as steps
from clusterwatch.demo import usage_steps
from clusterwatch.demo.monitor_steps import DemoError
from clusterwatch.demo.usage_jobs import RESEARCHER
from clusterwatch.errors import EXIT_FAILURE, EXIT_OK, EXIT_USAGE

DEFAULT_DATA_DIR = Path("demo-data")
DEFAULT_PORT = 8000
MARKER = ".clusterwatch-demo"
OPERATOR = "operator"  # staff: the harvester pages and the usage reports' staff page
ROUNDS = 3  # reporter runs: the first only sets log positions, then two real intervals


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="clusterwatch monitor demo",
        description="Bring up the monitor on 127.0.0.1 with records posted by the real "
        "harvester reporter (the zipapp) over fixture harvester logs and a private MariaDB "
        "harvester database, and the usage reports of a researcher's four jobs (their "
        "series in a private Prometheus, accounting from a sacct stand-in), then serve "
        "until Ctrl-C. The pool watch's own demonstration is `clusterwatch watch demo` "
        "(scripts/demo watch).",
        epilog="Exit status: 0 done (or Ctrl-C), 1 a step failed, 2 usage error.")
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR, metavar="DIR",
                        help="the demo's files, made afresh (default: %(default)s)")
    parser.add_argument("--port", type=_port, default=DEFAULT_PORT,
                        help="gunicorn's port on 127.0.0.1; 0 picks a free one "
                        "(default: %(default)s)")
    parser.add_argument("--database-url", metavar="URL",
                        help="the monitor's database (default: SQLite in the data directory; "
                        "CLUSTERWATCH_DATABASE_PASSWORD_FILE is passed on)")
    parser.add_argument("--check", action="store_true",
                        help="check that the pages answer, then stop instead of serving")
    return parser


def _port(text: str) -> int:
    """A TCP port for argparse: 0-65535, else a usage error (not a traceback at bind time)."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0-65535, not {port}")
    return port


def main(argv: Optional[Sequence[str]] = None, out: Optional[IO[str]] = None) -> int:
    out = out or sys.stdout
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:
        return EXIT_OK if exc.code == 0 else EXIT_USAGE
    database = None
    if args.database_url:
        database = {"CLUSTERWATCH_DATABASE_URL": args.database_url}
        if os.environ.get("CLUSTERWATCH_DATABASE_PASSWORD_FILE"):
            database["CLUSTERWATCH_DATABASE_PASSWORD_FILE"] = os.environ[
                "CLUSTERWATCH_DATABASE_PASSWORD_FILE"]
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        run(args.data_dir.resolve(), args.port, out, check=args.check, database=database)
    except KeyboardInterrupt:
        out.write("\nstopped: gunicorn, MariaDB and Prometheus are down\n")
    except DemoError as exc:
        print(f"clusterwatch monitor demo: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    finally:
        signal.signal(signal.SIGTERM, previous)
    return EXIT_OK


def _interrupt(signum: int, frame: Optional[FrameType]) -> None:
    raise KeyboardInterrupt  # SIGTERM stops the demo as cleanly as Ctrl-C


def fresh_data_dir(path: Path) -> Path:
    """`path`, emptied if an earlier demo made it; DemoError if it holds anything else."""
    if path.exists():
        if not path.is_dir():
            raise DemoError(f"{path} is not a directory; choose another --data-dir")
        if not (path / MARKER).exists() and any(path.iterdir()):
            raise DemoError(f"{path} exists and was not made by the demo; choose another "
                            "--data-dir")
        shutil.rmtree(path)
    try:
        path.mkdir(mode=0o700, parents=True)
        (path / MARKER).write_text("made by clusterwatch monitor demo; removed by its next run\n")
    except OSError as exc:
        raise DemoError(f"cannot make the data directory {path}: {exc.strerror}") from None
    return path


def run(data_dir: Path, port: int, out: IO[str], *, check: bool = False,
        database: Optional[Mapping[str, str]] = None) -> None:
    """The whole demo; serves until Ctrl-C unless `check`."""
    steps.check_prerequisites()
    usage_steps.check_prerequisites()
    steps.check_port_free(port)
    fresh_data_dir(data_dir)
    out.write(f"clusterwatch monitor demo: files in {data_dir} (made afresh on each run)\n")
    with contextlib.ExitStack() as stack:
        usage = stack.enter_context(usage_steps.sources(data_dir, out))
        monitor = stack.enter_context(steps.monitor(data_dir, port, database, usage.environ,
                                                    out))
        logins = steps.create_accounts(monitor, {OPERATOR: True, RESEARCHER: False})
        password, researcher = logins[OPERATOR], logins[RESEARCHER]
        hosts = steps.harvesters(data_dir)
        for host in hosts:
            host.write_env(monitor.url, steps.create_token(monitor, host.key))
        out.write(f"  host tokens: one per harvester, in {data_dir}/harvesters/KEY/"
                  "reporter.env (mode 600); never printed\n")
        db = stack.enter_context(steps.mariadb(data_dir, hosts, out))
        app = steps.build_reporter(data_dir, out)
        steps.report(app, hosts, db, data_dir, ROUNDS, out)
        slack = stack.enter_context(steps.alarm_channel(monitor))
        steps.evaluate_alarms(monitor, slack, out)
        pages = steps.pages(monitor, hosts)
        steps.check_pages(monitor, pages, hosts, OPERATOR, password, out)
        usage_steps.summaries(monitor, usage.jobs, researcher, out)
        usage_pages = usage_steps.pages(usage.jobs)
        usage_steps.check_pages(monitor, usage_pages, {False: (RESEARCHER, researcher),
                                                       True: (OPERATOR, password)}, out)
        out.write(f"\nOpen {monitor.url}/hosts/ and log in as {OPERATOR!r} with password "
                  f"{password!r} (a demo account, staff):\n")
        for url, what in pages:
            out.write(f"  {monitor.url}{url:<28} {what}\n")
        for page in usage_pages:
            if page.staff:
                out.write(f"  {monitor.url}{page.path:<28} {page.what}\n")
        out.write(f"\nThe usage reports: log in as the researcher {RESEARCHER!r} with password "
                  f"{researcher!r} (a demo account; accounting is a stand-in for sacct):\n")
        for page in usage_pages:
            if not page.staff:
                out.write(f"  {monitor.url}{page.path:<28} {page.what}\n")
        if check:
            out.write("checked: every page answered 200; stopping\n")
            return
        out.write("Serving until Ctrl-C (then gunicorn, MariaDB and Prometheus stop).\n")
        out.flush()
        _serve(monitor.process)


def _serve(process: subprocess.Popen[bytes]) -> None:
    status = process.wait()
    raise DemoError(f"gunicorn exited with status {status}; see its log")


if __name__ == "__main__":
    sys.exit(main())
