# Written by hand on 2026-12-01 (a data migration).

from typing import Any

from django.db import migrations

from clusterwatch.monitor.ingest.horizon import horizon
from clusterwatch.monitor.ingest.store import indexable_queues
from clusterwatch.monitor.record.slices import host_summary, queue_slice
from clusterwatch.monitor.record.index import queues_in


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
    limit = horizon()
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
            for queue in sorted(indexable_queues(queues_in(record)))])


class Migration(migrations.Migration):

    dependencies = [
        ('monitor', '0004_report_digest'),
    ]

    operations = [
        migrations.RunPython(unfreeze, migrations.RunPython.noop, elidable=True),
    ]
