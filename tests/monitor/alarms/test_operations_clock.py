"""alarms.operations at the clock's edges: a silence made at a time the database's
microseconds cannot hold is in force at that very time, as `alarm_silence add` prints it."""

from __future__ import annotations

import pytest

from clusterwatch.monitor.alarms import operations, silence_store
from clusterwatch.monitor.core.models import AlarmSilence
from clusterwatch.monitor.site.management.commands.alarm_silence import state_of

pytestmark = pytest.mark.django_db


# Each rounded up to the next microsecond when stored: the row would start after it was made.
@pytest.mark.parametrize("now", [1_800_000_000.1234567, 1_800_000_000.0000007,
                                 1_796_411_849.3338537, 1_800_000_000.0])
def test_a_silence_is_active_at_the_time_it_was_made(now: float) -> None:
    row = operations.add_silence(["key:pandaharvester01"], duration_s=7200, until=None,
                                 comment="renewal", author="alice", now=now)
    assert state_of(row, now) == "active"
    assert operations.to_silence(row).active(now)
    stored = AlarmSilence.objects.get(id=row.id)
    assert state_of(stored, now) == "active"
    assert [s.id for s in silence_store.silences() if s.active(now)] == [row.id]
    assert stored.ends_at.timestamp() - stored.starts_at.timestamp() == pytest.approx(7200)
