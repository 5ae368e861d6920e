"""The JSON API: /api/v1/jobs/<jobid>/usage and /api/v1/users/<username>, over a fake sacct
and a loopback Prometheus; kept summaries; every failure a plain JSON answer, never a 500."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from django.contrib.auth.models import User
from django.test import Client

from clusterwatch.monitor.usage.analysis.summary_json import USAGE_KEYS
from clusterwatch.monitor.usage.models import KeptSummary
from tests.monitor.usage.page_support import client_of
from tests.monitor.usage.site import GiB, UsageSite

pytestmark = pytest.mark.django_db


def test_it_reports_an_ended_job_from_accounting_and_prometheus(usage_site: UsageSite) -> None:
    start, end = usage_site.job("4242", cpus=2, req_mem="8G")
    usage_site.measured("4242", start, end, busy_cpus=1.0, memory_bytes=200 * 1024**2)
    answer = client_of("alice").get("/api/v1/jobs/4242/usage")
    assert answer.status_code == 200
    document = answer.json()
    assert set(USAGE_KEYS) <= set(document)
    assert document["jobid"] == "4242" and document["user"] == "alice"
    assert document["cpu_efficiency"] == pytest.approx(0.5, abs=0.02)
    assert document["memory_peak_bytes"] == 200 * 1024**2
    assert document["memory_efficiency"] == pytest.approx(200 / 8192, rel=0.01)
    assert document["samples"] > 100
    assert {w["code"] for w in document["warnings"]} == {"low_cpu_efficiency",
                                                         "memory_over_request"}


def test_it_keeps_an_ended_jobs_summary_and_answers_from_it_when_prometheus_is_gone(
        usage_site: UsageSite) -> None:
    start, end = usage_site.job("4242")
    usage_site.measured("4242", start, end, busy_cpus=2.0, memory_bytes=6 * GiB)
    client = client_of("alice")
    first = client.get("/api/v1/jobs/4242/usage").json()
    kept = KeptSummary.objects.get(jobid="4242")
    assert kept.user == "alice" and kept.cpu_efficiency == first["cpu_efficiency"]
    usage_site.prometheus.fail_with(503, b"{}")
    usage_site.fail("sacct: error: slurmdbd is down")
    again = client.get("/api/v1/jobs/4242/usage")
    assert again.status_code == 200 and again.json() == first


def test_it_does_not_keep_a_running_or_just_ended_job(usage_site: UsageSite) -> None:
    now = datetime.now(timezone.utc).replace(microsecond=0)
    usage_site.job("1", start=now - timedelta(hours=1), running=True, state="RUNNING")
    usage_site.job("2", start=now - timedelta(minutes=30), hours=0.49)  # ended 36 s ago
    client = client_of("alice")
    running = client.get("/api/v1/jobs/1/usage").json()
    assert running["running"] is True and running["state"] == "RUNNING"
    assert client.get("/api/v1/jobs/2/usage").status_code == 200
    assert not KeptSummary.objects.exists()


def test_it_says_not_measured_rather_than_zero_when_prometheus_has_nothing(
        usage_site: UsageSite) -> None:
    usage_site.job("4242", max_rss="3G")
    document = client_of("alice").get("/api/v1/jobs/4242/usage").json()
    assert document["samples"] == 0 and document["measured"] is False
    assert document["memory_source"] == "accounting"
    assert document["memory_peak_bytes"] == 3 * GiB
    assert document["warnings"] == []
    assert any("not available" in note for note in document["notes"])


@pytest.mark.parametrize("jobid", ["12a", "1;rm", "123_[1-5]", "4242.batch", "9" * 20])
def test_it_answers_400_to_a_malformed_job_id(usage_site: UsageSite, jobid: str) -> None:
    answer = client_of("alice").get(f"/api/v1/jobs/{jobid}/usage")
    assert answer.status_code == 400
    assert answer.json()["error"].startswith("not a job id")


def test_it_answers_an_unknown_job_and_someone_elses_job_alike(usage_site: UsageSite) -> None:
    usage_site.job("4242", user="bob")
    client = client_of("alice")
    unknown, hidden = client.get("/api/v1/jobs/77/usage"), client.get("/api/v1/jobs/4242/usage")
    assert unknown.status_code == hidden.status_code == 404
    assert unknown.content == hidden.content


def test_it_refuses_anonymous_clients_and_bad_tokens(usage_site: UsageSite) -> None:
    usage_site.job("4242")
    assert Client().get("/api/v1/jobs/4242/usage").status_code == 403
    bad = Client(HTTP_AUTHORIZATION="Bearer cwu_AAAAAAAA_" + "x" * 43)
    assert bad.get("/api/v1/jobs/4242/usage").status_code == 403
    assert Client().get("/api/v1/users/alice").status_code == 403


def test_it_answers_503_with_a_plain_message_when_a_source_fails(usage_site: UsageSite) -> None:
    usage_site.job("4242")
    client = client_of("alice")
    usage_site.prometheus.fail_with(503, b"{}")
    answer = client.get("/api/v1/jobs/4242/usage")
    assert answer.status_code == 503 and "Prometheus" in answer.json()["error"]
    usage_site.fail("sacct: error: Problem talking to the database: Connection refused")
    answer = client.get("/api/v1/jobs/4242/usage")
    assert answer.status_code == 503
    assert "Connection refused" in answer.json()["error"]
    assert usage_site.prometheus.url not in answer.json()["error"]


def test_it_lists_a_users_jobs_with_kept_and_accounting_figures(usage_site: UsageSite) -> None:
    start, end = usage_site.job("1")
    usage_site.measured("1", start, end, busy_cpus=2.0, memory_bytes=6 * GiB)
    usage_site.job("2", start=start + timedelta(hours=2), max_rss="1G")
    usage_site.job("3", user="bob")
    client = client_of("alice")
    client.get("/api/v1/jobs/1/usage")  # keeps job 1
    answer = client.get("/api/v1/users/alice?days=7")
    assert answer.status_code == 200
    jobs = answer.json()["jobs"]
    assert [j["jobid"] for j in jobs] == ["2", "1"]  # newest first
    assert jobs[1]["measured"] is True and jobs[1]["cpu_efficiency"] > 0.95
    assert jobs[0]["memory_source"] == "accounting"
    assert client.get("/api/v1/users/bob").status_code == 404
    assert client.get("/api/v1/users/alice?days=0").status_code == 400
    assert client.get("/api/v1/users/alice?days=\u0663").status_code == 400  # Arabic-Indic 3
    # Twice is ambiguous (the pages refuse it too), never "the last one wins".
    assert client.get("/api/v1/users/alice?days=7&days=30").status_code == 400
    assert client.get("/api/v1/users/a%20b").status_code == 400


def test_it_lets_staff_and_a_token_read_as_their_user(usage_site: UsageSite) -> None:
    from clusterwatch.monitor.usage import api_tokens

    usage_site.job("4242", user="bob")
    assert client_of("root", staff=True).get("/api/v1/jobs/4242/usage").status_code == 200
    bob = User.objects.create_user("bob")
    _row, token = api_tokens.create(bob)
    scripted = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    assert scripted.get("/api/v1/jobs/4242/usage").json()["user"] == "bob"
    assert scripted.get("/api/v1/users/bob").status_code == 200
    bob.is_active = False
    bob.save()
    assert scripted.get("/api/v1/jobs/4242/usage").status_code == 403


def test_it_is_off_without_a_prometheus_url(usage_site: UsageSite,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CLUSTERWATCH_PROMETHEUS_URL")
    client = client_of("alice")
    assert client.get("/api/v1/jobs/4242/usage").status_code == 404
    assert client.get("/").status_code == 302


def test_it_indexes_its_paths_with_working_links(usage_site: UsageSite) -> None:
    start, end = usage_site.job("4242")
    usage_site.measured("4242", start, end, busy_cpus=2.0, memory_bytes=GiB)
    client = client_of("alice")
    client.get("/api/v1/jobs/4242/usage")
    page = client.get("/")
    assert page.status_code == 200
    text = page.content.decode()
    for path in ("/api/v1/users/alice", "/api/v1/jobs/4242/usage"):
        assert f'href="{path}"' in text
        assert client.get(path).status_code == 200
    assert Client().get("/").status_code == 302  # to the login page


def test_it_lets_staff_revoke_a_usage_token_in_the_admin(usage_site: UsageSite) -> None:
    from clusterwatch.monitor.usage import api_tokens
    from clusterwatch.monitor.usage.models import UsageApiToken

    usage_site.job("4242", user="bob")
    row, token = api_tokens.create(User.objects.create_user("bob"))
    admin = client_of("root", staff=True)
    User.objects.filter(username="root").update(is_superuser=True)
    listing = admin.get("/admin/usage/usageapitoken/")
    assert listing.status_code == 200 and row.prefix in listing.content.decode()
    assert row.digest not in listing.content.decode()
    admin.post("/admin/usage/usageapitoken/", {"action": "revoke",
                                               "_selected_action": [row.pk]})
    assert UsageApiToken.objects.get(pk=row.pk).revoked_at is not None
    scripted = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    assert scripted.get("/api/v1/jobs/4242/usage").status_code == 403
