# Written by hand on 2026-12-01 (a data migration).

import datetime as dt
from typing import Any

from django.conf import settings
from django.db import migrations
from django.utils import timezone

# The record's own reading (pure, below the kernel); ingest's rules are spelled out here as
# they stood when this ran (the horizon of ingest/horizon.py, the queue name's column
# width), so that the kernel's migrations import no feature.
from clusterwatch.monitor.record.index import queues_in
from clusterwatch.monitor.record.slices import host_summary, queue_slice


def unfreeze(apps: Any, schema_editor: Any) -> None:
    """Before ingest refused records dated ahead of the monitor's clock, one such record
    (2999-01-01) became its key's latest for good: the pages showed it, and the
    stale-reporter alarm could never fire for the key. Point each such key back at its
    newest record dated within the horizon (the first stored among equal times, as ingest
    does), with its pages' slices, or at nothing when it has none. The future records stay
    stored, never latest; the next real record would also take latest from them."""
    reports = apps.get_model("monitor", "HostReport")
    latest_reports = apps.get_model("monitor", "LatestReport")
    latest_queues = apps.get_model("monitor", "LatestQueue")
    limit = timezone.now() + dt.timedelta(seconds=settings.MAX_CLOCK_SKEW_S)
    queue_chars = latest_queues._meta.get_field("queue").max_length
    for latest in latest_reports.objects.filter(collected_at__gt=limit):
        newest = (reports.objects.filter(key=latest.key, collected_at__lte=limit)
                  .order_by("-collected_at", "pk").first())
        latest_queues.objects.filter(key=latest.key).delete()
        if newest is None:
            latest.delete()
            continue
        record = newest.record
        latest.report = newest
        latest.collected_at = newest.collected_at
        latest.summary = host_summary(record)
        latest.save()
        latest_queues.objects.bulk_create([
            latest_queues(key=latest.key, queue=queue, report=newest,
                          page_slice=queue_slice(record, queue))
            for queue in sorted(queues_in(record)) if len(queue) <= queue_chars])


class Migration(migrations.Migration):

    dependencies = [
        ('monitor', '0004_report_digest'),
    ]

    operations = [
        migrations.RunPython(unfreeze, migrations.RunPython.noop, elidable=True),
    ]
