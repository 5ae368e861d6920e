"""`clusterwatch monitor <command> [args...]`: Django's management commands for the web app.

`migrate`, `runserver`, `createsuperuser`, and the monitor's own, each listed with one line
by `clusterwatch monitor --help` (clusterwatch.monitor.site.command_list).
Settings come from the environment (CLUSTERWATCH_DATABASE_URL, CLUSTERWATCH_DATA_DIR, ...).

One verb is not Django's: `clusterwatch monitor demo` (clusterwatch.demo.monitor) runs before
any settings are read, because it makes its own private data directory and database.
"""

from __future__ import annotations

import argparse
import os

from clusterwatch.errors import ConfigError, RunError
from clusterwatch.monitor.site.command_list import listing

_DESCRIPTION = """\
Run one of the monitor's commands (Django management commands; `clusterwatch monitor help
COMMAND` explains one with its options). The settings come from the environment:
CLUSTERWATCH_DATABASE_URL (default: SQLite under CLUSTERWATCH_DATA_DIR, itself
~/.local/share/clusterwatch by default), CLUSTERWATCH_SECRET_KEY, CLUSTERWATCH_DEBUG; see
docs/monitor.md.

""" + listing() + """

`clusterwatch monitor demo [--check] [--port N] [--data-dir DIR]` is not a Django command:
it brings up the monitor on 127.0.0.1 with records posted by the real reporter (see
`clusterwatch monitor demo --help`)."""


def register(parser: argparse.ArgumentParser) -> None:
    parser.description = _DESCRIPTION
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("command", metavar="COMMAND", help="a Django management command")
    parser.add_argument("arguments", nargs=argparse.REMAINDER, metavar="ARGS",
                        help="the command's own arguments and options")
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    if args.command == "demo":
        from clusterwatch.demo.monitor import main as demo  # the demo's harness loads only here

        return demo(args.arguments)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "clusterwatch.monitor.site.settings")
    try:
        from django.core.management import execute_from_command_line
        from django.db.utils import OperationalError
    except ImportError:
        raise RunError("the monitor needs Django: pip install 'clusterwatch[monitor]'") from None
    from clusterwatch.monitor.core.secrets import SettingError

    try:
        execute_from_command_line(["clusterwatch monitor", args.command, *args.arguments])
    except SettingError as exc:
        raise ConfigError(str(exc)) from None
    except ValueError as exc:  # a malformed CLUSTERWATCH_* setting (settings.py says which)
        if str(exc).startswith("CLUSTERWATCH_"):
            raise ConfigError(str(exc)) from None
        raise
    except OperationalError as exc:
        # The database is down, refuses the login or is locked: say so in one line. The
        # driver's message names the server and the user, never the password.
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise RunError(f"database error: {first}") from None
    return 0
