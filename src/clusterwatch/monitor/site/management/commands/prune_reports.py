"""`clusterwatch monitor prune_reports [--days N] [--dry-run]`: retention of host records.

Deletes records collected more than N days ago (default CLUSTERWATCH_RETENTION_DAYS) except
each key's latest record, in batches; progress goes to stderr, the counts to stdout.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from clusterwatch.monitor.ingest import retention


class Command(BaseCommand):
    help = "Delete host records older than the retention period, keeping each key's latest."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--days", type=int, default=None,
                            help="keep this many days (default: RETENTION_DAYS)")
        parser.add_argument("--dry-run", action="store_true", help="count, delete nothing")
        parser.add_argument("--batch", type=int, default=retention.BATCH,
                            help=f"records per delete (default {retention.BATCH})")

    def handle(self, *args: Any, **options: Any) -> None:
        days: int = settings.RETENTION_DAYS if options["days"] is None else options["days"]
        if days < 1:
            raise CommandError(f"--days must be at least 1, not {days}")
        if options["batch"] < 1:
            raise CommandError("--batch must be at least 1")
        cutoff = timezone.now() - dt.timedelta(days=days)

        def progress(total: int) -> None:
            self.stderr.write(f"deleted {total} records so far")

        result = retention.prune(cutoff, dry_run=options["dry_run"], batch=options["batch"],
                                 progress=progress)
        verb = "would delete" if result.dry_run else "deleted"
        self.stdout.write(f"{verb} {result.deleted} records collected before "
                          f"{cutoff:%Y-%m-%d %H:%M:%SZ}; kept {result.kept_as_latest} older "
                          "record(s) that are still a key's latest")
