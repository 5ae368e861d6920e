"""The demo's accounting lines read back by the monitor's own sacct parser: the same job,
the same figures as the exporter's series tell."""

from __future__ import annotations

import pytest

from clusterwatch.demo.sacct_lines import (
    FIELDS,
    cpu_time_text,
    duration_text,
    job_lines,
    memory_text,
)
from clusterwatch.demo.usage_jobs import plans
from clusterwatch.loopback.job_series import history
from clusterwatch.monitor.usage.accounting.sacct_fields import parse_duration, parse_req_mem
from clusterwatch.monitor.usage.accounting.sacct_parse import FIELDS as MONITOR_FIELDS
from clusterwatch.monitor.usage.accounting.sacct_parse import parse_sacct

NOW = 1_800_000_000.0


@pytest.mark.parametrize(("seconds", "text"), [
    (0, "00:00:00"), (59, "00:00:59"), (7200, "02:00:00"), (86399, "23:59:59"),
    (86400, "1-00:00:00"), (3 * 86400 + 3661, "3-01:01:01")])
def test_it_writes_durations_as_sacct_does(seconds: int, text: str) -> None:
    assert duration_text(seconds) == text
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(("seconds", "text"), [
    (0.0, "00:00.000"), (61.25, "01:01.250"), (3599.9994, "59:59.999"),
    (3599.9996, "01:00:00"), (7325.9, "02:02:05"), (90000.0, "1-01:00:00")])
def test_it_writes_cpu_times_with_milliseconds_only_under_an_hour(seconds: float,
                                                                   text: str) -> None:
    assert cpu_time_text(seconds) == text
    assert parse_duration(text) == pytest.approx(seconds, abs=1.0)


@pytest.mark.parametrize(("size", "text"), [(8 << 30, "8G"), (1500 << 20, "1500M"),
                                            (1, "1M")])
def test_it_writes_memory_requests_as_totals(size: int, text: str) -> None:
    assert memory_text(size) == text
    assert parse_req_mem(text, cpus=4, nodes=2) >= size  # type: ignore[operator]


def test_it_offers_every_field_the_monitor_asks_for() -> None:
    assert set(MONITOR_FIELDS) <= set(FIELDS)
    for plan in plans(NOW):
        for line in job_lines(history(plan)):
            assert set(line) == set(FIELDS)


def test_the_monitors_parser_reads_each_job_as_planned() -> None:
    for plan in plans(NOW):
        job = history(plan)
        text = "".join("|".join(line[f] for f in MONITOR_FIELDS) + "\n"
                       for line in job_lines(job))
        (record,) = parse_sacct(text)
        assert (record.jobid, record.name, record.user, record.account) == \
            (plan.jobid, plan.name, "alice", "physics")
        assert record.state == "COMPLETED" and not record.running
        assert record.start is not None and record.start.timestamp() == plan.start
        assert record.end is not None and record.end.timestamp() == plan.end
        assert record.elapsed_s == plan.end - plan.start
        assert record.cpus_allocated == plan.cpus and record.gpus == 0
        assert record.memory_requested_bytes == plan.memory_requested_bytes
        assert record.nodelist == plan.node and record.nodes == 1
        # The high-water mark of the batch step, to the KiB sacct counts in.
        assert record.max_rss_bytes == pytest.approx(job.totals.max_rss_bytes, abs=1024)
        assert record.total_cpu_s == pytest.approx(job.totals.cpu_s, abs=1.0)
        assert record.time_limit_s is not None and record.time_limit_s > record.elapsed_s
