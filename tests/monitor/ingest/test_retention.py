"""prune_reports: old records go, each key's latest stays, batches, dry runs, counts."""

from __future__ import annotations

import datetime as dt
import io

import pytest
from django.core.management import CommandError, call_command
from django.test import override_settings
from django.utils import timezone

from clusterwatch.monitor.core.models import HostReport, JobPush, LatestQueue, LatestReport
from clusterwatch.monitor.ingest import retention
from clusterwatch.monitor.ingest.store import store_record
from tests.monitor.records import example

pytestmark = pytest.mark.django_db


def _days_ago(days: float) -> dt.datetime:
    return (timezone.now() - dt.timedelta(days=days)).replace(microsecond=0)


def _store(key: str, days: float, pandaid: int | None = None) -> HostReport:
    record = example(key, _days_ago(days))
    if pandaid is not None:
        record["submission"]["recent_pushes"] = [
            {"at": "2026-10-02T18:23:14Z", "pandaid": pandaid, "queue": "Q", "workerid": 1}]
    return store_record(key, record, 100)[0]


def _prune(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("prune_reports", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_it_deletes_old_records_but_keeps_each_keys_latest() -> None:
    old_a = [_store("a01", days) for days in (40, 35)]
    fresh_a = _store("a01", 1)
    silent_b = [_store("b01", days) for days in (50, 45)]  # b01 stopped reporting long ago
    out, _ = _prune("--days", "30")
    remaining = set(HostReport.objects.values_list("pk", flat=True))
    assert remaining == {fresh_a.pk, silent_b[1].pk}
    assert not {report.pk for report in old_a} & remaining
    assert dict(LatestReport.objects.values_list("key", "report_id")) == {
        "a01": fresh_a.pk, "b01": silent_b[1].pk}
    assert LatestQueue.objects.filter(key="b01").exists()
    assert "deleted 3 records" in out and "kept 1 older record(s)" in out


def test_it_uses_the_retention_setting_by_default() -> None:
    _store("a01", 12)
    _store("a01", 8)
    keep = _store("a01", 1)
    with override_settings(RETENTION_DAYS=10):
        _prune()
    assert list(HostReport.objects.values_list("pk", flat=True).order_by("pk"))[-1] == keep.pk
    assert HostReport.objects.count() == 2


def test_it_counts_without_deleting_on_a_dry_run() -> None:
    for days in (40, 39, 38):
        _store("a01", days)
    _store("a01", 1)
    out, _ = _prune("--days", "30", "--dry-run")
    assert "would delete 3 records" in out
    assert HostReport.objects.count() == 4


def test_it_deletes_in_batches_and_reports_progress() -> None:
    for number in range(7):
        _store("a01", 40 + number)
    _store("a01", 1)
    out, err = _prune("--days", "30", "--batch", "3")
    assert err.splitlines() == ["deleted 3 records so far", "deleted 6 records so far",
                                "deleted 7 records so far"]
    assert "deleted 7 records" in out
    assert HostReport.objects.count() == 1


def test_it_removes_the_pushes_first_seen_in_removed_records() -> None:
    _store("a01", 40, pandaid=1)
    _store("a01", 1, pandaid=2)
    _prune("--days", "30")
    assert list(JobPush.objects.values_list("pandaid", flat=True)) == [2]


def test_it_never_deletes_a_record_that_is_the_latest_when_its_batch_runs() -> None:
    old = _store("a01", 40)
    result = retention.prune(timezone.now(), batch=1)  # everything is "old"
    assert result.deleted == 0 and result.kept_as_latest == 1
    assert HostReport.objects.get() == old


def test_it_says_so_when_there_is_nothing_to_prune() -> None:
    out, err = _prune("--days", "30")
    assert "deleted 0 records" in out and err == ""


@pytest.mark.parametrize(("args", "message"), [
    (("--days", "0"), "--days must be at least 1"),
    (("--batch", "0"), "--batch must be at least 1"),
])
def test_it_refuses_nonsense_options(args: tuple[str, ...], message: str) -> None:
    with pytest.raises(CommandError, match=message):
        _prune(*args)
