"""The job page /usage/jobs/<jobid>/ over a fake sacct and a loopback Prometheus: allocated vs
used, the warnings with their figures and advice, memory explained, the plots; every refusal
and failure a page of its own with its status, never a 500."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

import pytest
from django.test import Client

from clusterwatch.monitor.usage.config import get_config
from clusterwatch.monitor.usage.models import KeptSummary
from tests.monitor.usage.page_support import client_of, text_of, without_csrf
from tests.monitor.usage.site import GiB, UsageSite

pytestmark = pytest.mark.django_db
MiB = 1024**2


def measured_job(site: UsageSite, jobid: str = "4242", **job: object) -> None:
    start, end = site.job(jobid, cpus=2, req_mem="8G", **job)  # type: ignore[arg-type]
    site.measured(jobid, start, end, busy_cpus=1.0, memory_bytes=200 * MiB)


def test_it_shows_what_the_job_asked_for_and_used_side_by_side(usage_site: UsageSite) -> None:
    measured_job(usage_site)
    answer = client_of("alice").get("/usage/jobs/4242/")
    assert answer.status_code == 200
    text = text_of(answer)
    assert "Job 4242 “analysis" in text
    for field in ("User alice", "Account physics", "State COMPLETED", "Elapsed 1 h"):
        assert field in text
    assert "CPU 2 CPUs 1.00 CPUs on average" in text and "50.0 %" in text
    assert "Memory 8.0 GiB 200.0 MiB at peak (RSS + shared memory) 2.4 %" in text
    assert "GPUs 0 none asked" in text
    assert re.search(r"rest on \d{3} scrapes", text)


def test_it_explains_each_warning_with_its_figures_and_advice(usage_site: UsageSite) -> None:
    measured_job(usage_site)
    text = text_of(client_of("alice").get("/usage/jobs/4242/"))
    assert "2 things to change in the job script" in text
    assert "Low CPU efficiency The job used 50% of the CPU time it was allocated" in text
    assert "In the job script: Ask for as many CPUs as the program keeps busy" in text
    assert "CPU efficiency (CPU time used / allocated) 50.0 % warns below 80.0 %" in text
    assert "Memory over-requested" in text and "--mem=1G" in text
    assert "memory requested 8.0 GiB memory peak (RSS + shared memory) 200.0 MiB" in text
    assert "suggested request 1.0 GiB" in text


def test_it_explains_the_kinds_of_memory_side_by_side(usage_site: UsageSite) -> None:
    measured_job(usage_site)
    text = text_of(client_of("alice").get("/usage/jobs/4242/"))
    assert "use the job's own memory (RSS + shared memory)" in text
    assert "The job's own memory (RSS + shared memory) 200.0 MiB" in text
    assert "Page cache 64.0 MiB File data the kernel kept" in text
    assert "The cgroup's usage 264.0 MiB What Slurm's memory limit counts" in text
    assert "Slurm's MaxRSS (sacct) 200.0 MiB" in text


def test_it_embeds_a_plot_per_measured_metric_the_pie_and_the_links(
        usage_site: UsageSite) -> None:
    measured_job(usage_site)
    content = client_of("alice").get("/usage/jobs/4242/").content.decode()
    plots = re.findall(r'<img src="/plot/4242/(\w+)" alt="([^"]+)" width="800" height="360"',
                       content)
    assert [name for name, _alt in plots] == ["cpu", "cpu_time", "memory", "threads",
                                             "open_files"]
    assert all(alt.endswith("of job 4242 over its life") for _name, alt in plots)
    assert '<img src="/pie/4242/"' in content
    assert 'href="/pdf/4242"' in content and 'href="/api/v1/jobs/4242/usage"' in content
    assert "gpu" not in " ".join(name for name, _alt in plots)


def test_it_adds_the_gpu_plots_when_the_job_had_gpus_measured(usage_site: UsageSite) -> None:
    start, end = usage_site.job("4242")
    usage_site.measured("4242", start, end, busy_cpus=2.0, memory_bytes=GiB)
    times = [start.timestamp() + 30 * i for i in range(121)]
    usage_site.series("4242", "jobs_gpu_utilization_ratio", [(t, 0.05) for t in times],
                      gpu_uuid="GPU-8c2f")
    answer = client_of("alice").get("/usage/jobs/4242/")
    assert 'src="/plot/4242/gpu_utilization"' in answer.content.decode()
    text = text_of(answer)
    assert "Idle GPU" in text and "utilization of the least busy GPU 5.0 %" in text


def test_it_says_a_running_job_is_running_and_its_figures_are_so_far(
        usage_site: UsageSite) -> None:
    start = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(hours=1)
    usage_site.job("4242", start=start, running=True, state="RUNNING")
    usage_site.measured("4242", start, start + timedelta(minutes=59), busy_cpus=2.0,
                        memory_bytes=GiB)
    text = text_of(client_of("alice").get("/usage/jobs/4242/"))
    assert "This job is still running: the figures below are so far, not final." in text
    assert "Ended still running" in text and "so far" in text


def test_it_says_why_there_are_no_plots_for_a_job_prometheus_never_saw(
        usage_site: UsageSite) -> None:
    usage_site.job("4242", max_rss="3G")
    answer = client_of("alice").get("/usage/jobs/4242/")
    assert answer.status_code == 200
    text = text_of(answer)
    assert "No plots. The exporter's series of this job are not available" in text
    assert "too little was measured to judge it" in text
    assert "3.0 GiB at peak (Slurm's MaxRSS)" in text
    assert "The job's own memory (RSS + shared memory) not measured" in text
    assert "<img" not in answer.content.decode().split("Over the job's life")[1].split(
        "User vs system")[0]


def test_it_answers_from_the_kept_summary_when_prometheus_is_down(
        usage_site: UsageSite) -> None:
    measured_job(usage_site)
    client = client_of("alice")
    assert client.get("/usage/jobs/4242/").status_code == 200
    assert KeptSummary.objects.filter(jobid="4242").exists()
    usage_site.prometheus.fail_with(503, b"{}")
    answer = client.get("/usage/jobs/4242/")
    assert answer.status_code == 200
    text = text_of(answer)
    assert "Low CPU efficiency" in text and "kept when the job ended" in text
    assert "No plots. Prometheus is unavailable (unavailable), so the plots cannot be drawn" \
        in text


def test_it_escapes_a_hostile_job_name(usage_site: UsageSite) -> None:
    usage_site.job("4242", name='<script>alert("x")</script><img src=x onerror=alert(1)>')
    content = client_of("alice").get("/usage/jobs/4242/").content.decode()
    assert "<script" not in content and "<img src=x" not in content
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in content


def test_it_answers_an_unknown_job_and_someone_elses_alike_with_a_404_page(
        usage_site: UsageSite) -> None:
    usage_site.job("4242", user="bob")
    client = client_of("alice")
    unknown, hidden = client.get("/usage/jobs/77/"), client.get("/usage/jobs/4242/")
    assert unknown.status_code == hidden.status_code == 404
    assert "No job with this id that you may see." in text_of(hidden)
    assert without_csrf(unknown.content) == without_csrf(hidden.content)
    assert "bob" not in text_of(hidden)


def test_it_lets_staff_and_account_members_see_a_job(usage_site: UsageSite,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    measured_job(usage_site, user="bob")
    assert client_of("root", staff=True).get("/usage/jobs/4242/").status_code == 200
    measured_job(usage_site, "5", user="carol")
    carol = client_of("carol")
    assert carol.get("/usage/jobs/5/").status_code == 200  # keeps it: carol used physics
    assert carol.get("/usage/jobs/4242/").status_code == 404
    monkeypatch.setenv("CLUSTERWATCH_USAGE_ACCOUNT_ACCESS", "1")
    get_config.cache_clear()
    assert carol.get("/usage/jobs/4242/").status_code == 200


@pytest.mark.parametrize("jobid", ["12a", "1;rm", "123_[1-5]", "4242.batch", "9" * 20])
def test_it_answers_a_malformed_job_id_with_a_400_page(usage_site: UsageSite,
                                                       jobid: str) -> None:
    answer = client_of("alice").get(f"/usage/jobs/{jobid}/")
    assert answer.status_code == 400
    assert "Not a job id:" in text_of(answer) and "such as 4242" in text_of(answer)


def test_it_shows_a_503_page_when_prometheus_is_down_or_slow(
        usage_site: UsageSite, monkeypatch: pytest.MonkeyPatch) -> None:
    measured_job(usage_site, start=datetime.now(timezone.utc) - timedelta(hours=2),
                 running=True, state="RUNNING")
    client = client_of("alice")
    usage_site.prometheus.fail_with(502, b"bad gateway")
    down = client.get("/usage/jobs/4242/")
    assert down.status_code == 503
    assert "The job's metrics are not available now: Prometheus is unavailable" in text_of(down)
    assert "try again in a few minutes" in text_of(down)
    monkeypatch.setenv("CLUSTERWATCH_PROMETHEUS_TIMEOUT_S", "0.5")
    get_config.cache_clear()
    usage_site.prometheus.fail_with(200, b"{}", hold=True)  # only the 0.5 s timeout decides
    slow = client.get("/usage/jobs/4242/")
    assert slow.status_code == 503 and "(timeout)" in text_of(slow)
    assert usage_site.prometheus.url not in slow.content.decode()


def test_it_shows_a_503_page_when_accounting_fails_or_is_misconfigured(
        usage_site: UsageSite, monkeypatch: pytest.MonkeyPatch) -> None:
    usage_site.job("4242")
    client = client_of("alice")
    usage_site.fail("sacct: error: Problem talking to the database: Connection refused")
    failed = client.get("/usage/jobs/4242/")
    assert failed.status_code == 503 and "Connection refused" in text_of(failed)
    monkeypatch.setenv("CLUSTERWATCH_SACCT", "/nonexistent/sacct")
    get_config.cache_clear()
    broken = client.get("/usage/jobs/4242/")
    assert broken.status_code == 503
    assert "the monitor's configuration is wrong" in text_of(broken)
    assert "/nonexistent" not in broken.content.decode()


def test_it_sends_anonymous_visitors_to_the_login_page(usage_site: UsageSite) -> None:
    answer = Client().get("/usage/jobs/4242/")
    assert answer.status_code == 302
    assert answer["Location"] == "/accounts/login/?next=/usage/jobs/4242/"


def test_it_answers_only_get_and_is_off_without_a_prometheus_url(
        usage_site: UsageSite, monkeypatch: pytest.MonkeyPatch) -> None:
    usage_site.job("4242")
    client = client_of("alice")
    assert client.post("/usage/jobs/4242/").status_code == 405
    monkeypatch.delenv("CLUSTERWATCH_PROMETHEUS_URL")
    off = client.get("/usage/jobs/4242/")
    assert off.status_code == 404 and "The usage reports are off" in text_of(off)
    assert "Your jobs" not in text_of(off)  # its links would be 404s too
    anonymous = Client().get("/usage/jobs/4242/")
    assert anonymous.status_code == 404 and "/usage/users//" not in anonymous.content.decode()
