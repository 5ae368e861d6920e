"""How far ahead of the monitor's clock a record may be dated.

"Latest" for a key is the newest `collected_at`, so one record dated in the future (a
reporter host whose clock runs ahead, a forged time) would stay latest until real time
caught up with it: ages negative, new records never shown, the stale-reporter alarm unable
to fire. Reporter clocks drift a little, so a small lead is allowed:
`CLUSTERWATCH_MAX_CLOCK_SKEW_S` (default 600 s). Beyond this horizon ingest refuses a
record, and no record beyond it is ever made latest or stays latest (see `store`).
"""

from __future__ import annotations

import datetime as dt
from typing import Optional

from django.conf import settings
from django.utils import timezone

from clusterwatch.monitor.ingest.errors import Rejection
from clusterwatch.monitor.record.times import utc_text

SETTING = "CLUSTERWATCH_MAX_CLOCK_SKEW_S"


def horizon(now: Optional[dt.datetime] = None) -> dt.datetime:
    """The latest `collected_at` the monitor takes as real at `now` (default: now)."""
    return (now or timezone.now()) + dt.timedelta(seconds=settings.MAX_CLOCK_SKEW_S)


def check_not_ahead(collected_at: dt.datetime, now: Optional[dt.datetime] = None) -> None:
    """400 `future` for a record dated beyond the horizon, saying by how much."""
    now = now or timezone.now()
    if collected_at <= horizon(now):
        return
    ahead = (collected_at - now).total_seconds()
    raise Rejection(400, "future", f"collected_at {utc_text(collected_at)} is {ahead:.0f} s ahead "
                                   f"of the monitor's clock ({utc_text(now)}); more than "
                                   f"{settings.MAX_CLOCK_SKEW_S} s ahead ({SETTING}) is "
                                   "refused: check the reporter host's clock (NTP)")
