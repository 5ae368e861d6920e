"""The demo jobs' stories, told by the monitor's own reading of them: their series read back
with range queries (from a loopback query API), their accounting lines parsed, then the
analysis and the warning rules. Each job must get exactly the warnings its story is about,
with the figures it was planned to have."""

from __future__ import annotations

import pytest

from clusterwatch.demo.sacct_lines import job_lines
from clusterwatch.demo.usage_jobs import EXPECTED_WARNINGS, FIRST_JOBID, RESEARCHER, plans
from clusterwatch.demo.usage_steps import story_problem, summary_line
from clusterwatch.loopback.job_series import history
from clusterwatch.monitor.usage.accounting.sacct_parse import FIELDS, parse_sacct
from clusterwatch.monitor.usage.analysis import rules
from clusterwatch.monitor.usage.analysis.figures import UsageSummary, analyse
from clusterwatch.monitor.usage.metrics.series import fetch_job_series
from tests.monitor.usage.prometheus_range import RangePrometheus

NOW = 1_800_000_000.0
GiB = 1024**3


@pytest.fixture(scope="module")
def reports() -> dict[str, tuple[UsageSummary, set[str]]]:
    found = {}
    with RangePrometheus() as prometheus:
        jobs = [history(plan) for plan in plans(NOW)]
        for job in jobs:
            for one in job.series:
                prometheus.add(one.metric, dict(one.labels), one.points)
        for job in jobs:
            text = "".join("|".join(line[f] for f in FIELDS) + "\n" for line in job_lines(job))
            (record,) = parse_sacct(text)
            assert record.start and record.end
            series = fetch_job_series(prometheus.url, record.jobid, record.start, record.end)
            summary = analyse(record, series)
            found[job.plan.name] = (summary, {w.code for w in rules.check(record, summary)})
    return found


def test_they_are_the_researchers_and_ended_hours_ago() -> None:
    jobs = plans(NOW)
    assert [job.jobid for job in jobs] == [str(FIRST_JOBID + i) for i in range(4)]
    assert {job.user for job in jobs} == {RESEARCHER}
    assert all(2 * 3600 < NOW - job.end < 6 * 3600 for job in jobs)
    assert {job.name for job in jobs} == set(EXPECTED_WARNINGS)


def test_each_job_gets_the_warnings_of_its_story(
        reports: dict[str, tuple[UsageSummary, set[str]]]) -> None:
    for name, (summary, codes) in reports.items():
        assert summary.measured and summary.samples >= 90, name
        assert codes == EXPECTED_WARNINGS[name], name


def test_the_figures_are_what_each_job_did(
        reports: dict[str, tuple[UsageSummary, set[str]]]) -> None:
    one_of_two = reports["align-reads"][0]
    assert one_of_two.cpu_efficiency == pytest.approx(0.5, abs=0.03)
    big_request = reports["make-figures"][0]
    assert big_request.memory_peak_bytes == pytest.approx(200e6, rel=0.05)
    assert big_request.memory_efficiency == pytest.approx(200e6 / (8 * GiB), rel=0.05)
    good = reports["lattice-sim"][0]
    assert good.cpu_efficiency is not None and good.cpu_efficiency > 0.9
    assert good.memory_efficiency is not None and 0.6 < good.memory_efficiency < 0.8
    bursty = reports["fit-models"][0]
    assert bursty.cores_used_max and bursty.cores_used_mean
    assert bursty.cores_used_max > 7 and bursty.cores_used_mean < 3


def test_a_story_that_went_wrong_is_said() -> None:
    assert story_problem("align-reads", {"low_cpu_efficiency", "unbalanced_cores"}) is None
    assert story_problem("align-reads", {"low_cpu_efficiency", "unbalanced_cores",
                                         "too_many_threads"}) is None  # more is still the story
    assert story_problem("align-reads", {"low_cpu_efficiency"}) == \
        "warnings ['low_cpu_efficiency'], not ['low_cpu_efficiency', 'unbalanced_cores']"
    assert story_problem("lattice-sim", set()) is None
    assert story_problem("lattice-sim", {"bursty_cpu"}) == "warnings ['bursty_cpu'], not none"
    assert story_problem("make-figures", set()) == "warnings none, not ['memory_over_request']"


def test_a_summary_line_reads_well_and_says_what_was_not_measured() -> None:
    document: dict[str, object] = {
        "cpu_efficiency": 0.504, "cpus_allocated": 2, "memory_peak_bytes": 1468006400,
        "memory_requested_bytes": 2 * GiB, "memory_efficiency": 0.68,
        "warnings": [{"code": "low_cpu_efficiency"}, {"code": "unbalanced_cores"}]}
    assert summary_line(document) == ("CPU 50% of 2 CPUs; memory 1.4 GiB of 2.0 GiB (68%); "
                                      "warnings: low_cpu_efficiency, unbalanced_cores")
    bare: dict[str, object] = {
        "cpu_efficiency": None, "cpus_allocated": 1, "memory_peak_bytes": None,
        "memory_requested_bytes": None, "memory_efficiency": None, "warnings": []}
    assert summary_line(bare) == "CPU not measured (1 CPU); memory not measured; no warning"


def test_the_moment_is_a_parameter() -> None:
    later = plans(NOW + 3600)
    assert [job.end - 3600 for job in later] == [job.end for job in plans(NOW)]
