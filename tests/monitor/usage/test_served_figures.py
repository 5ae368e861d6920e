"""Issue 19 items 15 and 16 replayed against the monitor under gunicorn: the job figures of
counters that reset during a job (an exporter restart, a re-created cgroup), and of readings
that cannot be true (scaled by 1e300, negative, NaN, +Inf), through the JSON API, the job
page and the email built from the served document. One monitor for the module."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from clusterwatch.monitor.usage.mail.content import text_part
from tests.monitor.usage.prometheus_range import RangePrometheus
from tests.monitor.usage.served_usage import Served, served_usage
from tests.monitor.usage.site import UsageSite

CPUS = 4
BUSY = 0.9 * CPUS  # CPUs busy all along: 90 % of the allocation
HOUR = 3600.0
# Seconds since the job's start at which its CPU counters restart from 0.
RESETS = {"5001": (1810.0,), "5002": (40.0,), "5003": (905.0, 2710.0)}
# The impossible jobs: accounting knows nothing of their CPU time or memory either, so
# whatever figure the JSON holds could only come from the readings.
IMPOSSIBLE = {"5101": "1e300", "5102": "negative", "5103": "nan", "5104": "inf"}


def _counter(resets: tuple[float, ...]) -> Callable[[float], float]:
    """BUSY CPU-seconds per second since the start or since the last reset before `s`."""
    return lambda s: BUSY * (s - max((r for r in resets if r <= s), default=0.0))


def _add_job(
    site: UsageSite,
    jobid: str,
    start: datetime,
    value: Callable[[str, float], float],
    **accounting: str,
) -> None:
    site.job(jobid, start=start, cpus=CPUS, req_mem="8G", **accounting)
    times = [start.timestamp() + 30.0 * i for i in range(int(HOUR // 30) + 1)]

    def add(metric: str) -> None:
        site.series(jobid, metric, [(t, value(metric, t - start.timestamp())) for t in times])

    site.series(jobid, "jobs_info", [(t, 1.0) for t in times])
    for metric in (
        "jobs_cpu_seconds_total",
        "jobs_cpu_user_seconds_total",
        "jobs_cpu_system_seconds_total",
        "jobs_memory_rss_bytes",
        "jobs_memory_shmem_bytes",
        "jobs_memory_cache_bytes",
        "jobs_memory_usage_bytes",
        "jobs_threads",
        "jobs_process_threads_max",
        "jobs_open_files",
    ):
        add(metric)


def _plausible(resets: tuple[float, ...]) -> Callable[[str, float], float]:
    cpu = _counter(resets)
    share = {
        "jobs_cpu_seconds_total": 1.0,
        "jobs_cpu_user_seconds_total": 0.95,
        "jobs_cpu_system_seconds_total": 0.05,
    }
    gauges = {
        "jobs_memory_rss_bytes": 6 * 2**30,
        "jobs_memory_shmem_bytes": 0.0,
        "jobs_memory_cache_bytes": 2**26,
        "jobs_memory_usage_bytes": 6 * 2**30 + 2**26,
        "jobs_threads": 5.0,
        "jobs_process_threads_max": 4.0,
        "jobs_open_files": 12.0,
    }
    return lambda metric, s: share[metric] * cpu(s) if metric in share else gauges[metric]


def _impossible(kind: str) -> Callable[[str, float], float]:
    honest = _plausible(())

    def value(metric: str, s: float) -> float:
        if kind == "1e300":
            return honest(metric, s) * 1e300
        if kind == "negative":
            return -honest(metric, s) if "cpu" in metric else honest(metric, s)
        # One bad scrape in the middle of each series, the rest plausible.
        if 1800 <= s < 1830:
            return math.nan if kind == "nan" else math.inf
        return honest(metric, s)

    return value


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, migrated_database: dict[str, str]
) -> Iterator[Served]:
    tmp_path = tmp_path_factory.mktemp("figures")
    start = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(days=1)
    with RangePrometheus() as prometheus:
        site = UsageSite(tmp_path, prometheus)
        for jobid, resets in RESETS.items():
            _add_job(site, jobid, start, _plausible(resets))
        for jobid, kind in IMPOSSIBLE.items():
            _add_job(
                site,
                jobid,
                start,
                _impossible(kind),
                total_cpu="",
                user_cpu="",
                system_cpu="",
                max_rss="",
            )
        with served_usage(tmp_path, migrated_database, site) as served:
            yield served


def _document(served: Served, jobid: str) -> dict[str, Any]:
    status, body = served.session.get(f"/api/v1/jobs/{jobid}/usage")
    assert status == 200, body[:300]
    document: dict[str, Any] = json.loads(body)
    return document


@pytest.mark.parametrize("jobid", list(RESETS))
def test_a_counter_reset_during_the_job_leaves_its_figures_true(served: Served, jobid: str) -> None:
    document = _document(served, jobid)
    # 90 % busy; each reset loses what ran between the scrape before it and the reset
    # (5 to 10 s here), as Prometheus' increase() does. Read as plain last values, these
    # jobs gave 0.4475, 0.89 and 0.2225.
    assert document["cpu_efficiency"] == pytest.approx(0.90, abs=0.005)
    assert document["cpu_used_s"] == pytest.approx(BUSY * HOUR, rel=0.01)
    assert document["cpu_user_s"] == pytest.approx(0.95 * BUSY * HOUR, rel=0.01)
    assert document["cpu_source"] == "exporter"
    assert "low_cpu_efficiency" not in {w["code"] for w in document["warnings"]}
    # Asked again, the kept summary says the same.
    assert _document(served, jobid) == document
    status, page = served.session.get(f"/usage/jobs/{jobid}/")
    assert status == 200 and "Low CPU efficiency" not in page.decode()


@pytest.mark.parametrize("jobid", list(IMPOSSIBLE))
def test_an_impossible_reading_is_not_measured_with_a_note(served: Served, jobid: str) -> None:
    status, body = served.session.get(f"/api/v1/jobs/{jobid}/usage")
    assert status == 200
    # Every number the JSON holds is one a double holds (a 310-digit integer is not).
    json.loads(
        body,
        parse_int=_double,
        parse_float=_double,
        parse_constant=lambda name: pytest.fail(f"{name} in the JSON"),
    )
    document = json.loads(body)
    kind = IMPOSSIBLE[jobid]
    assert document["warnings"] == []
    assert document["cpu_used_s"] is None and document["cpu_efficiency"] is None
    assert document["cpu_user_s"] is None and document["cpu_system_s"] is None
    notes = " ".join(document["notes"])
    assert "cannot be true" in notes and "CPU time" in notes
    if kind != "negative":  # the negative job's memory readings are plausible
        assert document["memory_peak_bytes"] is None
        assert document["memory_efficiency"] is None
        assert set(document["memory"].values()) == {None}
        assert "memory" in notes
    status, page = served.session.get(f"/usage/jobs/{jobid}/")
    shown = page.decode()
    assert status == 200 and "cannot be true" in shown and "not measured" in shown
    mail = text_part(document, greeting="Alice", base_url="https://monitor.example.org")
    assert "cannot be true" in " ".join(mail.split()) and "not measured" in mail.casefold()


def _double(text: str) -> float:
    value = float(text)
    assert math.isfinite(value), f"{text[:40]}... is past what a double holds"
    return value
