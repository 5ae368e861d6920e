"""`clusterwatch monitor remove_harvester KEY`: take a key off the harvester registry (its
records stay). Exit 0 removed, 1 it was not registered."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from clusterwatch.monitor.core import registry


class Command(BaseCommand):
    help = "Remove a harvester key from the registry."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("key", metavar="KEY")

    def handle(self, *args: Any, **options: Any) -> None:
        if not registry.remove(options["key"]):
            raise CommandError(f"{options['key']} is not registered")
        self.stdout.write(f"removed {options['key']}")
