"""remote_report.store: a built record goes through ingest's checks and store, in-process
(the command's own tests run it as a subprocess): history, the latest rule, a repeat."""

from __future__ import annotations

import datetime as dt

import pytest

from clusterwatch.errors import RunError
from clusterwatch.monitor.core.models import HostReport, LatestReport
from clusterwatch.monitor.panda.remote.builder import build_record
from clusterwatch.monitor.panda.remote.run import store
from tests.monitor.panda.remote_rows import HARVESTER, KEY, NOW, perlmutter_config, perlmutter_rows

pytestmark = pytest.mark.django_db


def record_at(now: dt.datetime) -> dict[str, object]:
    return build_record(HARVESTER, KEY, perlmutter_rows(), perlmutter_config(), now)


def test_it_keeps_history_and_moves_latest_only_to_a_newer_record() -> None:
    newer, older = record_at(NOW), record_at(NOW - dt.timedelta(minutes=5))
    assert store(KEY, newer, 1000) is True
    assert store(KEY, older, 1000) is False  # a late run never replaces fresher data
    assert HostReport.objects.filter(key=KEY).count() == 2
    assert LatestReport.objects.get(key=KEY).report.record == newer


def test_the_same_record_twice_is_stored_once_and_is_no_error() -> None:
    record = record_at(NOW)
    assert store(KEY, record, 1000) is True
    assert store(KEY, dict(record), 1000) is True
    assert HostReport.objects.filter(key=KEY).count() == 1


def test_a_record_the_schema_refuses_is_a_run_error_and_nothing_is_stored() -> None:
    record = record_at(NOW)
    record["collected_at"] = "yesterday"
    with pytest.raises(RunError, match="the record was refused: schema: at collected_at"):
        store(KEY, record, 1000)
    assert not HostReport.objects.exists()
    with pytest.raises(RunError, match="host_mismatch"):
        store("another-key", record_at(NOW), 1000)
