"""The alarm outbox in the database: `notify.outbox.Outbox` as JSON in one row.

Callers change it only inside a transaction that holds the alarm lease (see `lease`);
`load(for_update=True)` also locks the row, so on PostgreSQL even a writer that skipped the
lease would wait instead of overwriting.
"""

from __future__ import annotations

from typing import Any, Optional

from django.utils import timezone

from clusterwatch.monitor.core.models import AlarmOutbox
from clusterwatch.notify.outbox import Outbox

ROW_ID = 1


def load(for_update: bool = False) -> Outbox:
    return Outbox.from_json(_row(for_update).outbox or {})


def save(outbox: Outbox, last_run: Optional[dict[str, Any]] = None) -> None:
    row = _row(for_update=True)
    row.outbox = outbox.to_json()
    fields = ["outbox", "updated_at"]
    if last_run is not None:
        row.last_run = last_run
        fields.append("last_run")
    row.updated_at = timezone.now()
    row.save(update_fields=fields)


def last_run() -> dict[str, Any]:
    row = AlarmOutbox.objects.filter(id=ROW_ID).first()
    return dict(row.last_run) if row is not None and row.last_run else {}


def _row(for_update: bool) -> AlarmOutbox:
    if for_update:
        row: AlarmOutbox = AlarmOutbox.objects.select_for_update().get_or_create(id=ROW_ID)[0]
        return row
    existing: Optional[AlarmOutbox] = AlarmOutbox.objects.filter(id=ROW_ID).first()
    return existing if existing is not None else AlarmOutbox(id=ROW_ID)
