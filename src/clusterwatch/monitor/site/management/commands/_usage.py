"""Usage errors in one line, exit 2, for the alarm commands scripts call; who typed them.

Django's parser prints argparse's usage block before the error, several lines a script's log
then has to make sense of; these commands answer a missing `--comment` or an unknown option
as they answer a bad matcher: one line naming the command, exit status 2, nothing stored.
(A leading underscore: Django does not take this module for a command.)
"""

from __future__ import annotations

import getpass
from typing import NoReturn

from django.core.management.base import CommandError, CommandParser


class UsageParser(CommandParser):
    def error(self, message: str) -> NoReturn:
        line = f"{self.prog}: {message} (--help: its usage)"
        if self.called_from_command_line:
            self.exit(2, line + "\n")
        raise CommandError(line, returncode=2)


def one_line_usage(parser: CommandParser) -> CommandParser:
    """`parser` (and the subcommand parsers it makes from now on) with one-line errors."""
    parser.__class__ = UsageParser
    return parser


def login_name() -> str:
    """Who typed it, when --author is not given: the Unix login."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"
