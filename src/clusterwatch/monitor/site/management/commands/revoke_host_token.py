"""`clusterwatch monitor revoke_host_token PREFIX` or `... revoke_host_token --stdin`.

A token is a secret, so the whole token is never taken from the command line (it would sit
in shell history and in every `ps` listing): give its prefix (`cwh_Ab3dE6gH`, as
create_host_token and list_host_tokens print it), or pipe the whole token on stdin.
"""

from __future__ import annotations

import getpass
import sys
from typing import Any, Optional

from django.core.management.base import BaseCommand, CommandError, CommandParser

from clusterwatch.monitor.core.models import HostToken
from clusterwatch.monitor.ingest import tokens


class Command(BaseCommand):
    help = "Revoke a host token, by its prefix or with the whole token read from stdin."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("prefix", nargs="?", metavar="PREFIX",
                            help="the token's prefix, e.g. cwh_Ab3dE6gH")
        parser.add_argument("--stdin", action="store_true",
                            help="read the whole token from standard input instead")

    def handle(self, *args: Any, **options: Any) -> None:
        given: Optional[str] = options["prefix"]
        if options["stdin"] == (given is not None):
            raise CommandError("give either a PREFIX or --stdin (the whole token on stdin)")
        row = self._from_stdin() if given is None else self._from_prefix(given)
        keys = tokens.describe_keys(tokens.keys_of(row))
        if tokens.revoke(row):
            self.stdout.write(f"revoked {row.prefix} (keys: {keys})")
        else:
            self.stdout.write(f"{row.prefix} was already revoked at "
                              f"{row.revoked_at:%Y-%m-%d %H:%M:%SZ} (keys: {keys})")

    def _from_prefix(self, given: str) -> HostToken:
        if tokens.prefix_of(given.strip()) is not None:
            raise CommandError("that is a whole token, which must not be on a command line; "
                               "give only its prefix (the part before the second '_'), or "
                               "pipe the token into revoke_host_token --stdin")
        prefix = tokens.normal_prefix(given)
        if prefix is None:
            raise CommandError("not a token prefix: expected cwh_ and 8 letters or digits")
        row = tokens.find(prefix)
        if row is None:
            raise CommandError(f"no token has the prefix {prefix}")
        return row

    def _from_stdin(self) -> HostToken:
        # At a terminal, read it without echo, so it does not stay on the screen either.
        text = (getpass.getpass("token: ") if sys.stdin.isatty()
                else sys.stdin.readline()).strip()
        prefix = tokens.prefix_of(text)
        if prefix is None:
            raise CommandError("stdin does not hold a token (cwh_XXXXXXXX_...)")
        row = tokens.find(prefix)
        if row is None or not tokens.matches(row.digest, text):
            raise CommandError(f"no such token (prefix {prefix})")
        return row
