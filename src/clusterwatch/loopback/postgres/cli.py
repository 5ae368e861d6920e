"""`python -m clusterwatch.loopback.postgres run [--skip-missing] [--keep] -- COMMAND [ARGS]`:
COMMAND against a private, throwaway PostgreSQL server (clusterwatch.loopback.postgres).

The command gets CLUSTERWATCH_DATABASE_URL (the `clusterwatch` database, no password in it)
and CLUSTERWATCH_DATABASE_PASSWORD_FILE; its exit status becomes ours. scripts/test runs the
monitor's tests a second time this way.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Sequence
from typing import Optional

from clusterwatch.loopback.postgres import (
    DATABASE,
    STOP_TIMEOUT_S,
    PostgresMissing,
    PostgresStartError,
    postgres_server,
)
from clusterwatch.loopback.services import LOOPBACK


def _parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m clusterwatch.loopback.postgres",
        description="Run a command against a private, throwaway PostgreSQL server on "
        "127.0.0.1 (the monitor's PostgreSQL test pass).",
        epilog="Exit status: the command's; 1 when the server could not start (or is not "
        "installed, unless --skip-missing).")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    run = verbs.add_parser(
        "run", help="start a server, run COMMAND with CLUSTERWATCH_DATABASE_URL and "
        "CLUSTERWATCH_DATABASE_PASSWORD_FILE naming it, stop the server")
    run.add_argument("--skip-missing", action="store_true",
                     help="when PostgreSQL is not installed, say so and exit 0")
    run.add_argument("--keep", action="store_true",
                     help="keep the server's directory (data and log) afterwards")
    run.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND [ARGS...]")
    args = parser.parse_args(argv)
    if args.command[:1] == ["--"]:
        args.command = args.command[1:]
    if not args.command:
        parser.error("run needs a command after --")
    return args


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = _parse(sys.argv[1:] if argv is None else argv)
    try:
        with postgres_server(keep=args.keep) as server:
            print(f"postgres: PostgreSQL {server.bindir.parent.name} on {LOOPBACK}:"
                  f"{server.port}, database {DATABASE}, directory {server.base}",
                  file=sys.stderr, flush=True)
            return _run_command(args.command, {**os.environ, **server.environ()})
    except PostgresMissing as exc:
        if args.skip_missing:
            print(f"postgres: skipped: {exc}", file=sys.stderr)
            return 0
        print(f"postgres: {exc}", file=sys.stderr)
        return 1
    except PostgresStartError as exc:
        print(f"postgres: {exc}", file=sys.stderr)
        return 1


def _run_command(command: list[str], env: dict[str, str]) -> int:
    try:
        process = subprocess.Popen(command, env=env)
    except OSError as exc:
        print(f"postgres: cannot run {command[0]}: {exc.strerror}", file=sys.stderr)
        return 127
    try:
        return process.wait()
    except KeyboardInterrupt:
        # Ctrl-C reached the command too: let it finish its own cleanup, then stop ours.
        try:
            return process.wait(STOP_TIMEOUT_S)
        except (KeyboardInterrupt, subprocess.TimeoutExpired):
            process.terminate()
            return process.wait()
