"""GET /mail/<jobid>: the email as its recipient reads it, under the API's access rules and
refusals (400, 403, 404 alike for unknown and hidden, 503), never a 500."""

from __future__ import annotations

import pytest
from django.test import Client

from clusterwatch.monitor.usage.config import get_config
from clusterwatch.monitor.usage.usage_report import load_report
from tests.monitor.usage.page_support import client_of, without_csrf
from tests.monitor.usage.site import UsageSite

pytestmark = pytest.mark.django_db


def measured_job(site: UsageSite, jobid: str = "4242", **options: object) -> None:
    start, end = site.job(jobid, **options)  # type: ignore[arg-type]
    site.measured(jobid, start, end, busy_cpus=1.0, memory_bytes=200 * 1024**2)


def test_it_shows_the_owner_the_html_and_text_parts(usage_site: UsageSite) -> None:
    measured_job(usage_site)
    answer = client_of("alice").get("/mail/4242")
    assert answer.status_code == 200
    page = answer.content.decode()
    assert "Job 4242 (analysis) COMPLETED: used 50% of its CPUs" in page
    assert "<pre" in page and "What it asked for and what it used" in page
    assert 'style="border-left:4px solid #b3261e' in page  # the HTML part itself, not escaped
    assert "job-4242-usage.pdf" in page
    # Without CLUSTERWATCH_EMAIL_BASE_URL the links point at the monitor that was asked.
    assert 'href="http://testserver/usage/jobs/4242/"' in page


def test_it_escapes_a_hostile_job_name(usage_site: UsageSite) -> None:
    measured_job(usage_site, name="<script>alert(1)</script>")
    page = client_of("alice").get("/mail/4242").content.decode()
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_it_answers_an_unknown_job_and_someone_elses_alike(usage_site: UsageSite) -> None:
    measured_job(usage_site, user="bob")
    client = client_of("alice")
    unknown, hidden = client.get("/mail/77"), client.get("/mail/4242")
    assert unknown.status_code == hidden.status_code == 404
    assert without_csrf(unknown.content) == without_csrf(hidden.content)


def test_staff_and_account_members_see_it_when_allowed(usage_site: UsageSite,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    measured_job(usage_site, "1", user="bob", account="physics")
    measured_job(usage_site, "2", user="carol", account="physics")
    assert client_of("root", staff=True).get("/mail/1").status_code == 200
    carol = client_of("carol")
    load_report("2")  # keeps carol's job: her account is known from it
    assert carol.get("/mail/1").status_code == 404
    monkeypatch.setenv("CLUSTERWATCH_USAGE_ACCOUNT_ACCESS", "1")
    get_config.cache_clear()
    assert carol.get("/mail/1").status_code == 200


@pytest.mark.parametrize("jobid", ["12a", "1;rm", "4242.batch", "9" * 20])
def test_it_answers_400_to_a_malformed_job_id(usage_site: UsageSite, jobid: str) -> None:
    answer = client_of("alice").get(f"/mail/{jobid}")
    assert answer.status_code == 400 and b"not a job id" in answer.content.lower()


def test_it_refuses_an_anonymous_client(usage_site: UsageSite) -> None:
    measured_job(usage_site)
    answer = Client().get("/mail/4242")
    assert answer.status_code == 403 and b"Log in" in answer.content
    assert b"analysis" not in answer.content


def test_it_answers_503_when_a_source_fails(usage_site: UsageSite) -> None:
    usage_site.job("4242")
    client = client_of("alice")
    usage_site.prometheus.fail_with(503, b"{}")
    answer = client.get("/mail/4242")
    assert answer.status_code == 503 and b"Prometheus" in answer.content
    usage_site.fail("sacct: error: slurmdbd is down")
    answer = client.get("/mail/4242")
    assert answer.status_code == 503 and b"slurmdbd is down" in answer.content


def test_it_is_off_without_a_prometheus_url_and_answers_get_only(
        usage_site: UsageSite, monkeypatch: pytest.MonkeyPatch) -> None:
    measured_job(usage_site)
    client = client_of("alice")
    assert client.head("/mail/4242").status_code == 200
    assert client.post("/mail/4242").status_code == 405
    monkeypatch.delenv("CLUSTERWATCH_PROMETHEUS_URL")
    assert client.get("/mail/4242").status_code == 404
