"""The alarm silences in the database (`AlarmSilence` rows) as `notify.silences.Silence`, for
the run and the status views, and their pruning.

The rows are written by `alarms.operations` (the page's forms and the commands); this module
only reads them, and deletes those that ended longer than `KEEP_ENDED_S` ago. A row whose
matchers no longer parse (a kind the monitor stopped knowing, a hand edit) is skipped with a
warning rather than failing the run: a silence that cannot be read holds nothing, which is
the safe way to be wrong.
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import Optional

from django.db.models import Q

from clusterwatch.monitor.alarms.holds import KINDS
from clusterwatch.monitor.core.models import AlarmSilence
from clusterwatch.notify.silences import KEEP_ENDED_S, Silence, SilenceError, parse_matcher

log = logging.getLogger(__name__)


def _epoch(value: Optional[dt.datetime]) -> Optional[float]:
    return None if value is None else value.timestamp()


def as_silence(row: AlarmSilence) -> Silence:
    """The row as a Silence; SilenceError when its matchers cannot be read."""
    texts = row.matchers if isinstance(row.matchers, list) else []
    if not texts or not all(isinstance(text, str) for text in texts):
        raise SilenceError(f"silence {row.id} has no readable matchers")
    return Silence(row.id, tuple(parse_matcher(text, KINDS) for text in texts),
                   row.starts_at.timestamp(), row.ends_at.timestamp(), row.comment, row.author,
                   row.created_at.timestamp(), _epoch(row.expired_at))


def silences() -> list[Silence]:
    """Every readable silence, oldest first (active or not: the caller asks `active`)."""
    found: list[Silence] = []
    for row in AlarmSilence.objects.order_by("created_at", "id"):
        try:
            found.append(as_silence(row))
        except SilenceError as exc:
            log.warning("alarm silence skipped: %s", exc)
    return found


def prune(now: float) -> int:
    """Delete the silences that ended more than KEEP_ENDED_S before `now`; how many."""
    cutoff = dt.datetime.fromtimestamp(now - KEEP_ENDED_S, tz=dt.timezone.utc)
    deleted: int
    deleted, _ = AlarmSilence.objects.filter(
        Q(ends_at__lte=cutoff) | Q(expired_at__lte=cutoff)).delete()
    return deleted
