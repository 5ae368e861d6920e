"""`clusterwatch monitor <command> [args...]`: Django's management commands for the web app.

`migrate`, `runserver`, `createsuperuser`, and the monitor's own: `create_host_token`,
`revoke_host_token`, `evaluate_alarms`, `prune_reports` (see `clusterwatch monitor help`).
Settings come from the environment (CLUSTERWATCH_DATABASE_URL, CLUSTERWATCH_DATA_DIR, ...).
"""

from __future__ import annotations

import argparse
import os

from clusterwatch.errors import ConfigError, RunError

_DESCRIPTION = """\
Run one of the monitor's Django management commands: migrate, runserver, createsuperuser,
create_host_token KEY [KEY ...], revoke_host_token PREFIX, evaluate_alarms, prune_reports,
... (`clusterwatch monitor help` lists them all, `clusterwatch monitor help COMMAND` explains
one). The settings come from the environment: CLUSTERWATCH_DATABASE_URL (default: SQLite under
CLUSTERWATCH_DATA_DIR, itself ~/.local/share/clusterwatch by default), CLUSTERWATCH_SECRET_KEY,
CLUSTERWATCH_DEBUG; see docs/monitor.md."""


def register(parser: argparse.ArgumentParser) -> None:
    parser.description = _DESCRIPTION
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("command", metavar="COMMAND", help="a Django management command")
    parser.add_argument("arguments", nargs=argparse.REMAINDER, metavar="ARGS",
                        help="the command's own arguments and options")
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "clusterwatch.monitor.settings")
    try:
        from django.core.management import execute_from_command_line
    except ImportError:
        raise RunError("the monitor needs Django: pip install 'clusterwatch[monitor]'") from None
    from clusterwatch.monitor.database_url import DatabaseUrlError

    try:
        execute_from_command_line(["clusterwatch monitor", args.command, *args.arguments])
    except DatabaseUrlError as exc:
        raise ConfigError(str(exc)) from None
    except ValueError as exc:  # a malformed CLUSTERWATCH_* number
        if str(exc).startswith("CLUSTERWATCH_"):
            raise ConfigError(str(exc)) from None
        raise
    return 0
