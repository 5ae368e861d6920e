"""`clusterwatch monitor register_harvester KEY [--remote] [--note TEXT]`: add a key to the
harvester registry (`clusterwatch.monitor.registry`). Exit 0 added or updated, 2 a bad key."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from clusterwatch.monitor import registry


class Command(BaseCommand):
    help = "Register a harvester key the monitor expects a record from."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("key", metavar="KEY", help="the harvester's record key")
        parser.add_argument("--remote", action="store_true",
                            help="its record is built from the PanDA server "
                                 "(remote_harvester_report)")
        parser.add_argument("--note", default="", help="a note shown in the admin")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            created = registry.register(options["key"], options["remote"], options["note"])
        except ValueError as exc:
            raise CommandError(str(exc), returncode=2) from None
        kind = "remote" if options["remote"] else "reporting"
        self.stdout.write(f"{'registered' if created else 'updated'} {options['key']} ({kind})")
