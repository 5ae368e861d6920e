"""/pdf/<jobid>, /pie/<jobid>/ and /plot/<jobid>/<metric> over the fake sacct and the loopback
Prometheus: the right content types, the original's metric names, refusals as plain text
with their status (never a 500), login for browsers, tokens for scripts, the render cache."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from clusterwatch.monitor.usage import api_tokens
from clusterwatch.monitor.usage.config import get_config
from tests.monitor.usage.site import GiB, UsageSite

pytestmark = pytest.mark.django_db
PNG = b"\x89PNG\r\n\x1a\n"


def alice() -> Client:
    client = Client()
    client.force_login(User.objects.create_user("alice"))
    return client


def measured_job(site: UsageSite, jobid: str = "4242", user: str = "alice") -> None:
    start, end = site.job(jobid, user=user)
    site.measured(jobid, start, end, busy_cpus=1.0, memory_bytes=2 * GiB)


@pytest.mark.parametrize(("path", "kind", "head"), [
    ("/pdf/4242", "application/pdf", b"%PDF"),
    ("/pie/4242/", "image/png", PNG),
    ("/plot/4242/cpu", "image/png", PNG),
    ("/plot/4242/memory", "image/png", PNG),
    ("/plot/4242/jobs_cpu_percent", "image/png", PNG),  # the original's name
    ("/plot/4242/jobs_rss", "image/png", PNG),
])
def test_it_draws_each_kind(usage_site: UsageSite, path: str, kind: str, head: bytes) -> None:
    measured_job(usage_site)
    answer = alice().get(path)
    assert answer.status_code == 200, answer.content[:200]
    assert answer["Content-Type"] == kind and answer.content.startswith(head)


def test_it_refuses_a_bad_metric_before_asking_any_source(usage_site: UsageSite) -> None:
    measured_job(usage_site)
    client = alice()
    for name in ("nonsense", "..", "cpu;drop", "cpu%00"):
        answer = client.get(f"/plot/4242/{name}")
        assert answer.status_code == 400, name
        assert answer["Content-Type"].startswith("text/plain")
    assert usage_site.prometheus.queries == []


@pytest.mark.parametrize("path", ["/pdf/{}", "/pie/{}/", "/plot/{}/cpu"])
def test_it_answers_refusals_without_revealing_anything(usage_site: UsageSite,
                                                        path: str) -> None:
    measured_job(usage_site, "4242", user="bob")
    client = alice()
    unknown, hidden = client.get(path.format("77")), client.get(path.format("4242"))
    assert unknown.status_code == hidden.status_code == 404
    assert unknown.content == hidden.content
    assert client.get(path.format("4x")).status_code == 400
    anonymous = Client().get(path.format("4242"))
    assert anonymous.status_code == 302 and "/accounts/login/" in anonymous["Location"]
    forged = Client(HTTP_AUTHORIZATION="Bearer nonsense").get(path.format("4242"))
    assert forged.status_code == 403


def test_a_script_reads_with_its_token(usage_site: UsageSite) -> None:
    measured_job(usage_site)
    _row, token = api_tokens.create(User.objects.create_user("alice"))
    answer = Client(HTTP_AUTHORIZATION=f"Bearer {token}").get("/pdf/4242")
    assert answer.status_code == 200 and answer.content.startswith(b"%PDF")


def test_prometheus_down_is_503_for_a_new_job_and_a_placeholder_for_a_kept_one(
        usage_site: UsageSite) -> None:
    measured_job(usage_site, "1")
    measured_job(usage_site, "2")
    client = alice()
    assert client.get("/api/v1/jobs/2/usage").status_code == 200  # job 2 is kept
    usage_site.prometheus.fail_with(503, b"{}")
    assert client.get("/plot/1/cpu").status_code == 503
    kept = client.get("/plot/2/cpu")
    assert kept.status_code == 200 and kept.content.startswith(PNG)
    assert client.get("/pdf/2").content.startswith(b"%PDF")


def test_an_ended_jobs_drawings_are_cached(usage_site: UsageSite) -> None:
    measured_job(usage_site)
    client = alice()
    first = client.get("/plot/4242/cpu").content
    cached = list(get_config().cache_dir.iterdir())
    assert len(cached) == 1 and cached[0].stat().st_mode & 0o777 == 0o600
    assert client.get("/plot/4242/jobs_cpu_percent").content == first  # an alias: one file
    assert len(list(get_config().cache_dir.iterdir())) == 1


@pytest.mark.parametrize("path", ["/pdf/4242", "/plot/4242/cpu", "/api/v1/jobs/4242/usage",
                                  "/api/v1/jobs/77/usage", "/pie/77/"])
def test_no_shared_or_browser_cache_keeps_a_report(usage_site: UsageSite, path: str) -> None:
    measured_job(usage_site)
    control = alice().get(path)["Cache-Control"]
    assert "private" in control and "no-store" in control
