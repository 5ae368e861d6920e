"""/plot/<jobid>/<metric> asks Prometheus only for what the plot draws: a kept job's plot reads
its metric's series and the scrape count, nothing else, so a job page with ten plots no longer
sends 19 queries per plot; the kept job's page itself reads only the scrape count, its plots
listed when it was kept. A job not kept yet still reads everything (its document is
analysed from them), and a changed reading still draws a new image: the render cache never
serves a plot of series Prometheus no longer holds."""

from __future__ import annotations

import re
from datetime import datetime

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils.html import escape

from clusterwatch.monitor.usage.config import get_config
from clusterwatch.monitor.usage.metrics.series import SPECS, JobSeries, fetch_job_series, selector
from clusterwatch.monitor.usage.models import KeptSummary
from clusterwatch.monitor.usage.rendering.plot_metrics import (
    ALIASES,
    METRICS,
    measured_metrics,
    series_keys,
)
from clusterwatch.monitor.usage.rendering.plots import render_plot
from clusterwatch.monitor.usage.usage_report import SERIES_GONE
from tests.monitor.usage.site import UsageSite

pytestmark = pytest.mark.django_db
PNG = b"\x89PNG\r\n\x1a\n"
METRIC_OF = {spec.key: spec.metric for spec in SPECS}


def alice() -> Client:
    client = Client()
    client.force_login(User.objects.create_user("alice"))
    return client


def every_series(site: UsageSite, jobid: str, start: datetime, end: datetime) -> None:
    """Every series SPECS reads, each with values of its own (two CPUs, two GPUs), sizes
    large enough to show beside an 8 GiB request, so a plot that lost one would look
    different; every value one that can be true (a ratio or a flag at most 1)."""
    t0 = start.timestamp()
    times = [t0 + i * 30.0 for i in range(int((end.timestamp() - t0) // 30) + 1)]
    site.series(jobid, "jobs_info", [(t, 1.0) for t in times])
    for number, spec in enumerate(SPECS, start=1):
        for part in ("0", "1"):
            scale = 1e6 if "_bytes" in spec.metric else 1.0
            scrapes = [(t, number * scale * (i + 1) * (1 + int(part)))
                       for i, t in enumerate(times)]
            if spec.metric in ("jobs_gpu_utilization_ratio", "jobs_uses_scratch"):
                scrapes = [(t, (1 + int(part)) / 2) for t in times]
            site.series(jobid, spec.metric, scrapes, core=part, gpu_uuid=f"GPU-{part}")


def kept_job(site: UsageSite, client: Client, jobid: str = "4242") -> tuple[float, float]:
    start, end = site.job(jobid)
    every_series(site, jobid, start, end)
    assert client.get(f"/api/v1/jobs/{jobid}/usage").status_code == 200
    assert KeptSummary.objects.filter(jobid=jobid).exists()
    site.prometheus.queries.clear()
    return start.timestamp(), end.timestamp()


def asked(site: UsageSite) -> tuple[set[str], list[str]]:
    """(the range queries' exporter metrics, the instant queries)."""
    queries = site.prometheus.queries
    ranges = {metric for q in queries if "step" in q
              for metric in METRIC_OF.values() if metric + "{" in q["query"]}
    return ranges, [q["query"] for q in queries if "step" not in q]


@pytest.mark.parametrize("metric", [*METRICS, "jobs_rss", "utilization_gpu"])
def test_it_asks_only_for_the_metrics_series_when_the_job_is_kept(
        usage_site: UsageSite, metric: str) -> None:
    client = alice()
    kept_job(usage_site, client)
    for _ in range(2):  # drawn, then served from the render cache: the same queries
        usage_site.prometheus.queries.clear()
        answer = client.get(f"/plot/4242/{metric}")
        assert answer.status_code == 200 and answer.content.startswith(PNG)
        ranges, instants = asked(usage_site)
        name = ALIASES.get(metric, metric)
        assert ranges == {METRIC_OF[key] for key in METRICS[name].keys}
        assert len(usage_site.prometheus.queries) == len(METRICS[name].keys) + 1
        assert instants == [f"count_over_time({selector('jobs_info', '4242')}[3630s])"]


def test_it_still_reads_every_series_for_a_job_not_kept_yet(usage_site: UsageSite) -> None:
    start, end = usage_site.job("4242", running=True, state="RUNNING")
    every_series(usage_site, "4242", start, end)
    answer = alice().get("/plot/4242/cpu")
    assert answer.status_code == 200 and answer.content.startswith(PNG)
    ranges, instants = asked(usage_site)
    assert ranges == set(METRIC_OF.values()) and len(instants) == 1
    assert not KeptSummary.objects.exists()


@pytest.mark.parametrize("metric", list(METRICS))
def test_a_plot_from_its_own_series_is_the_plot_from_all_of_them(
        usage_site: UsageSite, metric: str) -> None:
    """metric.keys is complete: a key the curves read but the table left out would be a
    curve missing from the plot of a kept job."""
    client = alice()
    start, end = kept_job(usage_site, client)
    document = KeptSummary.objects.get(jobid="4242").document
    url = get_config().prometheus_url
    moments = [datetime.fromtimestamp(t).astimezone() for t in (start, end)]
    everything = fetch_job_series(url, "4242", *moments)
    own = fetch_job_series(url, "4242", *moments, keys=series_keys(metric))
    assert set(own.series) == set(METRICS[metric].keys) < set(everything.series)
    assert render_plot(document, own, metric) == render_plot(document, everything, metric)


def test_it_draws_again_when_retention_drops_the_early_points(usage_site: UsageSite) -> None:
    client = alice()
    start, end = kept_job(usage_site, client)
    first = client.get("/plot/4242/memory").content
    usage_site.prometheus.forget_before(start + (end - start) / 2)
    later = client.get("/plot/4242/memory").content
    assert later.startswith(PNG) and later != first
    cache = get_config().cache_dir
    assert len(list(cache.iterdir())) == 2
    for drawn in cache.iterdir():
        drawn.unlink()
    assert client.get("/plot/4242/memory").content == later  # what the series now draw
    usage_site.prometheus.forget_before(end + 3600)  # all gone: said in words
    gone = client.get("/plot/4242/memory")
    assert gone.status_code == 200 and gone.content not in (first, later)


def test_it_refuses_keys_of_an_unknown_metric() -> None:
    with pytest.raises(ValueError, match="unknown metric"):
        series_keys("jobs_nonsense")
    assert series_keys("jobs_rss") == series_keys("memory")


def page_plots(client: Client, jobid: str = "4242") -> list[str]:
    answer = client.get(f"/usage/jobs/{jobid}/")
    assert answer.status_code == 200
    return re.findall(rf'<img src="/plot/{jobid}/(\w+)"', answer.content.decode())


def test_a_kept_jobs_page_asks_only_whether_its_series_are_still_there(
        usage_site: UsageSite) -> None:
    """The plots were listed when the job was kept: its page sends the scrape count alone
    (one query instead of 19) and shows the plots all the series would give."""
    client = alice()
    kept_job(usage_site, client)
    kept = KeptSummary.objects.get(jobid="4242")
    assert kept.plot_metrics == list(measured_metrics(kept_series(usage_site)))
    assert len(kept.plot_metrics) >= 8  # every series has values: most metrics plot
    usage_site.prometheus.queries.clear()
    assert page_plots(client) == kept.plot_metrics
    ranges, instants = asked(usage_site)
    assert ranges == set() and len(usage_site.prometheus.queries) == 1
    assert instants == [f"count_over_time({selector('jobs_info', '4242')}[3630s])"]


@pytest.mark.parametrize("listed", [None, "cpu", ["cpu", "no_such_metric"], [3]])
def test_a_summary_kept_without_a_usable_list_reads_the_series_for_its_page(
        usage_site: UsageSite, listed: object) -> None:
    """Kept before the list existed (null), or damaged in the database: the page reads every
    series, as it did, and still shows the right plots."""
    client = alice()
    kept_job(usage_site, client)
    expected = KeptSummary.objects.get(jobid="4242").plot_metrics
    KeptSummary.objects.filter(jobid="4242").update(plot_metrics=listed)
    assert page_plots(client) == expected
    ranges, _ = asked(usage_site)
    assert ranges == set(METRIC_OF.values())


def test_a_kept_jobs_page_says_when_retention_dropped_the_series(usage_site: UsageSite) -> None:
    client = alice()
    _, end = kept_job(usage_site, client)
    usage_site.prometheus.forget_before(end + 3600)
    answer = client.get("/usage/jobs/4242/")
    assert answer.status_code == 200 and "/plot/4242/" not in answer.content.decode()
    assert escape(SERIES_GONE) in answer.content.decode()
    assert len(usage_site.prometheus.queries) == 1


def kept_series(site: UsageSite) -> JobSeries:
    document = KeptSummary.objects.get(jobid="4242").document
    moments = [datetime.fromisoformat(document[key].replace("Z", "+00:00"))
               for key in ("start", "end")]
    return fetch_job_series(get_config().prometheus_url, "4242", *moments)
