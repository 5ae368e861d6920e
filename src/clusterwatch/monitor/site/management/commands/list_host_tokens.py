"""`clusterwatch monitor list_host_tokens`: prefix, created, revoked, keys and note per token.

Digests are never shown: they are all that stands in for the tokens at rest.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from clusterwatch.monitor.core.models import HostToken
from clusterwatch.monitor.ingest import tokens


def _utc(moment: Any) -> str:
    return "-" if moment is None else f"{moment:%Y-%m-%d %H:%M:%SZ}"


class Command(BaseCommand):
    help = "List host tokens (prefix, created, revoked, keys, note); never the tokens."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--active", action="store_true", help="only tokens not revoked")

    def handle(self, *args: Any, **options: Any) -> None:
        rows = HostToken.objects.order_by("created_at", "prefix").prefetch_related("keys")
        if options["active"]:
            rows = rows.filter(revoked_at__isnull=True)
        self.stdout.write(f"{'PREFIX':<14}{'CREATED':<22}{'REVOKED':<22}KEYS  NOTE")
        for row in rows:
            keys = tokens.describe_keys(sorted(link.key for link in row.keys.all()))
            note = f"  {row.note}" if row.note else ""
            self.stdout.write(f"{row.prefix:<14}{_utc(row.created_at):<22}"
                              f"{_utc(row.revoked_at):<22}{keys}{note}")
