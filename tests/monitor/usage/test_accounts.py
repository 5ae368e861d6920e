"""The monthly account reports from kept summaries: a few hundred seeded jobs, the report held
to an independent computation over the rows read by raw SQL (each run cut at month
boundaries by walking them, not by intersecting intervals); month boundaries, jobs without
efficiency figures, an account of one job, ties among the most wasteful; the command."""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import datetime, timedelta, timezone
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from clusterwatch.monitor.usage.accounts_source import month_jobs
from clusterwatch.monitor.usage.analysis.accounts import JobUsage, Month, hours_in, monthly_reports
from tests.monitor.usage.accounts_support import kept, raw_rows, seeded_jobs
from tests.monitor.usage.cli_support import run
from tests.monitor.usage.site import UsageSite

UTC = timezone.utc


def month_pieces(end: datetime, elapsed_s: int) -> dict[str, float]:
    """Hours of the run [end - elapsed, end) in each month, by walking month starts."""
    if elapsed_s <= 0:
        return {f"{end.year:04d}-{end.month:02d}": 0.0}
    pieces: dict[str, float] = {}
    moment = end - timedelta(seconds=elapsed_s)
    while moment < end:
        following = (datetime(moment.year + 1, 1, 1, tzinfo=UTC) if moment.month == 12
                     else datetime(moment.year, moment.month + 1, 1, tzinfo=UTC))
        stop = min(following, end)
        pieces[f"{moment.year:04d}-{moment.month:02d}"] = (stop - moment).total_seconds() / 3600
        moment = stop
    return pieces


def expected(month: str) -> dict[str, dict[str, Any]]:
    """Per account: jobs, CPU-h, GPU-h, weighted efficiencies, waste, by its own loop."""
    sums: dict[str, dict[str, Any]] = defaultdict(lambda: defaultdict(float))
    for row in raw_rows():
        hours = month_pieces(row.end, int(row.document["elapsed_s"])).get(month)
        if hours is None:
            continue
        cpu_h = row.document["cpus_allocated"] * hours
        figures = sums[row.account]
        figures["jobs"] += 1
        figures["cpu_hours"] += cpu_h
        figures["gpu_hours"] += row.document["gpus_allocated"] * hours
        if row.cpu_efficiency is not None:
            figures["cpu_sum"] += row.cpu_efficiency * cpu_h
            figures["cpu_weight"] += cpu_h
            figures["wasted"] += cpu_h - min(row.cpu_efficiency, 1.0) * cpu_h
        if row.memory_efficiency is not None:
            figures["memory_sum"] += row.memory_efficiency * cpu_h
            figures["memory_weight"] += cpu_h
    return {account: dict(figures) for account, figures in sums.items()}


def ratio(figures: dict[str, Any], name: str) -> Any:
    weight = figures.get(f"{name}_weight", 0.0)
    return figures[f"{name}_sum"] / weight if weight else None


@pytest.mark.django_db
def test_a_few_hundred_kept_jobs_agree_with_an_independent_computation() -> None:
    seeded_jobs(400, seed=22, begin=datetime(2026, 5, 20, tzinfo=UTC), days=140)
    for month in (Month(2026, 6), Month(2026, 7), Month(2026, 8), Month(2026, 9)):
        first = month.previous().previous().previous()
        reports = monthly_reports(month_jobs(first, month), month)
        want = expected(str(month))
        assert [report.account for report in reports] == sorted(want)
        for report in reports:
            figures, own = report.figures, want[report.account]
            assert figures.jobs == own["jobs"]
            assert figures.cpu_hours == pytest.approx(own["cpu_hours"])
            assert figures.gpu_hours == pytest.approx(own.get("gpu_hours", 0.0))
            assert figures.wasted_cpu_hours == pytest.approx(own.get("wasted", 0.0))
            assert figures.cpu_efficiency == pytest.approx(ratio(own, "cpu"))
            assert figures.memory_efficiency == pytest.approx(ratio(own, "memory"))
            # The trend: the three months before, each as that month's own report has it.
            earlier = [month.previous(), month.previous().previous(), first]
            assert [item.month for item in report.earlier] == [str(m) for m in earlier]
            for item in report.earlier:
                before = expected(item.month).get(report.account, {})
                assert item.jobs == before.get("jobs", 0)
                assert item.cpu_hours == pytest.approx(before.get("cpu_hours", 0.0))
    assert sum(r.figures.jobs for r in monthly_reports(
        month_jobs(Month(2026, 7), Month(2026, 7)), Month(2026, 7))) > 50


@pytest.mark.django_db
def test_a_run_across_a_month_end_counts_its_part_in_each_month() -> None:
    kept("1", end=datetime(2026, 4, 1, 2, tzinfo=UTC), elapsed_s=4 * 3600, cpus=8, gpus=2,
         cpu_efficiency=0.25)
    for month in (Month(2026, 3), Month(2026, 4)):
        [report] = monthly_reports(month_jobs(month, month), month)
        assert report.figures.jobs == 1
        assert report.figures.cpu_hours == pytest.approx(16.0)
        assert report.figures.gpu_hours == pytest.approx(4.0)
        assert report.figures.wasted_cpu_hours == pytest.approx(12.0)
    assert monthly_reports(month_jobs(Month(2026, 5), Month(2026, 5)), Month(2026, 5)) == []
    # Ended at midnight exactly: nothing of it in the month that begins then.
    kept("2", account="cms", end=datetime(2026, 6, 1, tzinfo=UTC), elapsed_s=3600)
    assert monthly_reports(month_jobs(Month(2026, 6), Month(2026, 6)), Month(2026, 6)) == []
    [may] = monthly_reports(month_jobs(Month(2026, 5), Month(2026, 5)), Month(2026, 5))
    assert may.account == "cms" and may.figures.cpu_hours == pytest.approx(1.0)


def test_an_elapsed_time_beyond_any_date_counts_the_month_since_its_start() -> None:
    end = datetime(2026, 3, 10, tzinfo=UTC)  # a damaged document's elapsed time: 31 My
    job = JobUsage("1", "alice", "atlas", end, 10**15, 2, 0, 0.5, 0.5)
    assert hours_in(job, Month(2026, 3)) == 9 * 24
    assert hours_in(job, Month(2026, 2)) == 28 * 24
    [report] = monthly_reports([job], Month(2026, 3))
    assert report.figures.cpu_hours == 2 * 9 * 24


@pytest.mark.django_db
def test_a_job_without_efficiency_figures_counts_in_hours_not_in_efficiency() -> None:
    end = datetime(2026, 3, 10, tzinfo=UTC)
    kept("1", end=end, elapsed_s=3600, cpus=10, cpu_efficiency=None, memory_efficiency=None)
    kept("2", account="cms", end=end, elapsed_s=3600, cpus=2, cpu_efficiency=None,
         memory_efficiency=None)
    kept("3", account="cms", end=end, elapsed_s=3600, cpus=2, cpu_efficiency=0.5,
         memory_efficiency=0.75)
    atlas, cms = monthly_reports(month_jobs(Month(2026, 3), Month(2026, 3)), Month(2026, 3))
    assert (atlas.account, atlas.figures.jobs, atlas.figures.cpu_hours) == ("atlas", 1, 10.0)
    assert atlas.figures.cpu_efficiency is None and atlas.figures.memory_efficiency is None
    assert atlas.figures.wasted_cpu_hours == 0.0 and atlas.wasteful_jobs == []
    # The measured job alone weighs in cms' efficiencies; both count in its hours.
    assert (cms.figures.jobs, cms.figures.cpu_hours) == (2, 4.0)
    assert cms.figures.cpu_efficiency == 0.5 and cms.figures.memory_efficiency == 0.75
    assert [job.name for job in cms.wasteful_jobs] == ["3"]


@pytest.mark.django_db
def test_an_account_of_one_job_and_a_damaged_document() -> None:
    kept("7", account="solo", user="zoe", end=datetime(2026, 2, 3, tzinfo=UTC),
         elapsed_s=7200, cpus=4, cpu_efficiency=0.9, memory_efficiency=0.1)
    kept("8", account="broken", end=datetime(2026, 2, 3, tzinfo=UTC), elapsed_s=60)
    from clusterwatch.monitor.usage.models import KeptSummary

    KeptSummary.objects.filter(jobid="8").update(document={"elapsed_s": "x"})
    broken, solo = monthly_reports(month_jobs(Month(2026, 2), Month(2026, 2)), Month(2026, 2))
    assert (broken.figures.jobs, broken.figures.cpu_hours) == (1, 0.0)
    assert solo.figures.jobs == 1 and solo.figures.cpu_hours == pytest.approx(8.0)
    assert solo.figures.wasted_cpu_hours == pytest.approx(0.8)
    assert [(u.name, round(u.wasted_cpu_hours, 6)) for u in solo.wasteful_users] == [
        ("zoe", 0.8)]
    assert [item.jobs for item in solo.earlier] == [0, 0, 0]


@pytest.mark.django_db
def test_the_most_wasteful_break_ties_by_name_and_leave_out_those_that_wasted_nothing() -> None:
    end = datetime(2026, 3, 10, tzinfo=UTC)
    for jobid, user, efficiency in (("30", "bob", 0.5), ("4", "alice", 0.5),
                                    ("5", "carol", 1.2), ("6", "bob", 0.0)):
        kept(jobid, user=user, end=end, elapsed_s=3600, cpus=2, cpu_efficiency=efficiency)
    [report] = monthly_reports(month_jobs(Month(2026, 3), Month(2026, 3)), Month(2026, 3),
                               top=3)
    assert [(j.name, j.wasted_cpu_hours) for j in report.wasteful_jobs] == [
        ("6", 2.0), ("30", 1.0), ("4", 1.0)]
    assert [(u.name, u.wasted_cpu_hours) for u in report.wasteful_users] == [
        ("bob", 3.0), ("alice", 1.0)]


def test_month_parsing_and_the_last_complete_month() -> None:
    assert Month.parse("2026-01").previous() == Month(2025, 12)
    assert Month.last_complete(datetime(2026, 1, 1, 0, 0, tzinfo=UTC)) == Month(2025, 12)
    assert Month(2026, 12).end == datetime(2027, 1, 1, tzinfo=UTC)
    for bad in ("2026-13", "2026-00", "2026-1", "26-01", "2026/01", "", "2026-01-01",
                "abcd-ef", "\uff12\uff10\uff12\uff16-01", " 2026-01", "0000-01", "9999-12"):
        with pytest.raises(ValueError, match="YYYY-MM"):
            Month.parse(bad)


@pytest.mark.django_db
def test_the_command_prints_the_report_as_text_and_json_and_says_when_a_month_is_empty(
) -> None:
    kept("1", account="atlas", end=datetime(2026, 3, 10, tzinfo=UTC), elapsed_s=3600, cpus=4,
         cpu_efficiency=0.25)
    kept("2", account="cms", end=datetime(2026, 3, 11, tzinfo=UTC), elapsed_s=3600)
    out = StringIO()
    call_command("usage_monthly", "--month", "2026-03", stdout=out)
    text = out.getvalue()
    assert "Account atlas" in text and "Account cms" in text and "25 %" in text
    out = StringIO()
    call_command("usage_monthly", "--month", "2026-03", "--account", "atlas", "--json",
                 stdout=out)
    document = json.loads(out.getvalue())
    assert document["month"] == "2026-03"
    [atlas] = document["accounts"]
    assert atlas["account"] == "atlas" and atlas["figures"]["cpu_hours"] == 4.0
    assert atlas["wasteful_jobs"] == [{"name": "1", "wasted_cpu_hours": 3.0, "cpu_hours": 4.0}]
    out = StringIO()
    call_command("usage_monthly", "--month", "2026-04", stdout=out)
    assert out.getvalue().strip() == "No kept jobs ran in 2026-04."
    out = StringIO()
    call_command("usage_monthly", stdout=out)  # the last complete month: nothing kept then
    assert out.getvalue().startswith("No kept jobs ran in")
    with pytest.raises(CommandError, match="YYYY-MM") as refused:
        call_command("usage_monthly", "--month", "March")
    assert refused.value.returncode == 2


def test_the_console_script_refuses_a_bad_month_with_exit_2(
        tmp_path: Path, site: UsageSite, migrated: Path) -> None:
    done = run(tmp_path, site, "usage_monthly", "--month", "2026-13")
    assert done.returncode == 2, done.stderr
    assert "YYYY-MM" in done.stderr and len(done.stderr.strip().splitlines()) == 1


@pytest.mark.django_db
def test_a_month_is_read_in_one_query(django_assert_num_queries: Any) -> None:
    seeded_jobs(50, seed=5, begin=datetime(2026, 3, 1, tzinfo=UTC), days=30)
    with django_assert_num_queries(1):
        jobs = month_jobs(Month(2026, 1), Month(2026, 3))
    assert len(jobs) == 50
