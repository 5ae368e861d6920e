"""`clusterwatch monitor list_harvesters [--remote]`: the harvester registry, one key a line
(`--remote`: the keys alone); otherwise key, kind, since, note and, for a remote key, what
`remote_harvester_report --registered` builds it from."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from clusterwatch.monitor.core import registry


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
                              f"\t{entry.note}" + (f"\t{_built_from(entry.builder)}"
                                                   if entry.remote else ""))


def _built_from(builder: registry.Builder) -> str:
    if not builder.harvester_id:
        return "not buildable: no harvester id registered"
    source = (builder.queue_config or f"IRI {builder.iri_resource}:{builder.iri_path}")
    return f"{builder.harvester_id} from {source}"
