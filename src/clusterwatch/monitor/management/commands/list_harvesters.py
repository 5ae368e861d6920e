"""`clusterwatch monitor list_harvesters [--remote]`: the harvester registry, one key a line
(`--remote`: the keys alone, for the remote builder's timer); otherwise key, kind, since, note."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from clusterwatch.monitor import registry


class Command(BaseCommand):
    help = "List the registered harvester keys."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--remote", action="store_true",
                            help="only the remote keys, one per line and nothing else")

    def handle(self, *args: Any, **options: Any) -> None:
        for entry in registry.registered(remote_only=options["remote"]):
            if options["remote"]:
                self.stdout.write(entry.key)
                continue
            kind = "remote" if entry.remote else "reporting"
            self.stdout.write(f"{entry.key}\t{kind}\t{entry.registered_at:%Y-%m-%d %H:%M:%SZ}"
                              f"\t{entry.note}")
