"""Retention: records collected before a cutoff go, except each key's latest record.

Deletes run in batches of ids, each its own short transaction, so a big first prune never
holds the database (SQLite's single writer lock in particular) for long and ingest goes on
between batches. A key's latest record is excluded inside each DELETE itself, so a record
that is the latest when its batch runs is never removed, whatever ingest did meanwhile.
Job pushes first seen in a removed record go with it (they are that old too).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass

from django.db import transaction

from clusterwatch.monitor.core.models import HostReport, LatestReport

BATCH = 500


@dataclass(frozen=True)
class PruneResult:
    cutoff: dt.datetime
    deleted: int
    kept_as_latest: int
    dry_run: bool


def prune(cutoff: dt.datetime, dry_run: bool = False, batch: int = BATCH,
          progress: Callable[[int], None] = lambda total: None) -> PruneResult:
    """Delete records collected before `cutoff` but a key's latest; `progress(total so far)`."""
    old = HostReport.objects.filter(collected_at__lt=cutoff)
    latest_ids = LatestReport.objects.values("report_id")
    kept = old.filter(pk__in=latest_ids).count()
    if dry_run:
        return PruneResult(cutoff, old.exclude(pk__in=latest_ids).count(), kept, True)
    deleted = 0
    last_id = 0
    while True:
        ids = list(old.filter(pk__gt=last_id).order_by("pk").values_list("pk", flat=True)
                   [:batch])
        if not ids:
            break
        last_id = ids[-1]
        with transaction.atomic():
            _, by_model = (HostReport.objects.filter(pk__in=ids)
                           .exclude(pk__in=LatestReport.objects.values("report_id")).delete())
        deleted += by_model.get(HostReport._meta.label, 0)
        progress(deleted)
    return PruneResult(cutoff, deleted, kept, False)
