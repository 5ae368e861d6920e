"""`clusterwatch monitor create_host_token KEY [KEY ...] [--note TEXT]`.

Prints the new token as the last line of standard output (scripts take `tail -n 1`); the
lines before it say what it is for. The token is shown this once: only its digest is kept.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from clusterwatch.monitor.ingest import tokens


class Command(BaseCommand):
    help = ("Create a host token allowed to post records for the given keys; the token is "
            "printed once, as the last line.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("keys", nargs="+", metavar="KEY",
                            help="report key(s) the token may write, e.g. pandaharvester01")
        parser.add_argument("--note", default="", help="what the token is for (200 chars)")

    def handle(self, *args: Any, **options: Any) -> None:
        keys: list[str] = list(dict.fromkeys(options["keys"]))
        bad = [key for key in keys if not tokens.valid_key(key)]
        if bad:
            raise CommandError(
                f"not a valid key: {bad[0]!r} (1-128 characters: letters, digits, '.', '_', "
                "'-', starting with a letter or digit)")
        note: str = options["note"]
        if len(note) > 200:
            raise CommandError(f"--note is {len(note)} characters; at most 200")
        row, token = tokens.create(keys, note)
        self.stdout.write(f"keys: {tokens.describe_keys(keys)}")
        self.stdout.write(f"prefix: {row.prefix} (to revoke: revoke_host_token {row.prefix})")
        self.stdout.write("The token is on the next line and is shown only this once; put it "
                          "in the reporter's environment file (mode 600):")
        self.stdout.write(token)
