"""The alarm silences in the database (`AlarmSilence` rows) as `notify.silences.Silence`, for
the run and the status views, and their pruning.

The rows are written by `alarms.operations` (the page's forms and the commands) and read
here as it reads them (`operations.readable`: a matcher of a kind the monitor does not know
holds nothing); this module deletes those that ended longer than `KEEP_ENDED_S` ago. A row
that cannot be read at all (no matchers, a hand edit) is skipped with a warning rather than
failing the run: a silence that cannot be read holds nothing, the safe way to be wrong.
"""

from __future__ import annotations

import datetime as dt

from django.db.models import Q

from clusterwatch.monitor.alarms.operations import readable
from clusterwatch.monitor.core.models import AlarmSilence
from clusterwatch.notify.silences import KEEP_ENDED_S, Silence


def silences() -> list[Silence]:
    """Every readable silence, oldest first (active or not: the caller asks `active`)."""
    return readable(AlarmSilence.objects.order_by("created_at", "id"))


def prune(now: float) -> int:
    """Delete the silences that ended more than KEEP_ENDED_S before `now`; how many."""
    cutoff = dt.datetime.fromtimestamp(now - KEEP_ENDED_S, tz=dt.timezone.utc)
    deleted: int
    deleted, _ = AlarmSilence.objects.filter(
        Q(ends_at__lte=cutoff) | Q(expired_at__lte=cutoff)).delete()
    return deleted
