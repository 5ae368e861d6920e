"""The user page /usage/users/<username>/: the user's jobs with allocated and used side by
side, sorted by any column through links, filtered by state and time through a GET form, in
pages; one accounting call and no Prometheus query; every refusal and bad parameter a page."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

import pytest
from django.test import Client

from clusterwatch.monitor.usage.web.job_rows import PAGE_SIZE
from tests.monitor.usage.page_support import client_of, job_ids, text_of, without_csrf
from tests.monitor.usage.site import GiB, UsageSite

pytestmark = pytest.mark.django_db
DAY = timedelta(days=1)


def three_jobs(site: UsageSite) -> datetime:
    """Jobs 1-3 of alice at 25 %, 100 % and 50 % CPU efficiency, a day apart, and a running
    job 4 (its efficiency not measured yet); one job of bob."""
    now = datetime.now(timezone.utc).replace(microsecond=0)
    site.job("1", start=now - 4 * DAY, total_cpu="00:30:00", req_mem="4G", max_rss="1G")
    site.job("2", start=now - 3 * DAY, total_cpu="02:00:00", state="FAILED", name="big one")
    site.job("3", start=now - 2 * DAY, total_cpu="01:00:00", req_mem="16G", max_rss="2G")
    site.job("4", start=now - timedelta(hours=1), running=True, state="RUNNING")
    site.job("9", user="bob")
    return now


def test_it_lists_the_users_jobs_with_allocated_and_used_side_by_side(
        usage_site: UsageSite) -> None:
    three_jobs(usage_site)
    answer = client_of("alice").get("/usage/users/alice/")
    assert answer.status_code == 200
    assert job_ids(answer) == ["4", "3", "2", "1"]  # newest first
    text = text_of(answer)
    assert "4 jobs that ran in the last 30 days" in text
    assert "Job CPU Memory GPU Time" in text
    assert ("Job Name State Started (UTC) ▼ CPUs CPU eff. Memory asked Memory peak "
            "Memory eff. GPUs Time limit Elapsed Warnings") in text
    assert re.search(r"3 analysis COMPLETED \d{4}-\d\d-\d\d \d\d:\d\d 2 50\.0 % 16\.0 GiB "
                     r"2\.0 GiB 12\.5 % 0 2 h 1 h", text)
    assert re.search(r"4 analysis RUNNING .* 2 — 8\.0 GiB — — 0 2 h 1 h so far", text)
    assert "9" not in job_ids(answer)
    assert usage_site.prometheus.queries == []  # accounting's figures: no query per job


def test_it_shows_a_kept_jobs_warnings_as_badges(usage_site: UsageSite) -> None:
    start, end = usage_site.job("7", cpus=2, req_mem="8G")
    usage_site.measured("7", start, end, busy_cpus=1.0, memory_bytes=200 * 1024**2)
    client = client_of("alice")
    client.get("/usage/jobs/7/")  # keeps its summary
    content = client.get("/usage/users/alice/").content.decode()
    assert '<span class="badge warn" title="low_cpu_efficiency">Low CPU efficiency' \
        '</span>' in content
    assert 'title="memory_over_request">Memory over-requested</span>' in content
    assert "1 of 1 with warnings" in text_of(client.get("/usage/users/alice/"))


@pytest.mark.parametrize(("sort", "order", "expected"), [
    ("cpu_efficiency", "asc", ["1", "3", "2", "4"]),  # the unmeasured job last either way
    ("cpu_efficiency", "desc", ["2", "3", "1", "4"]),
    ("memory_requested", "desc", ["3", "4", "2", "1"]),
    ("memory_efficiency", "asc", ["2", "3", "1", "4"]),
    ("state", "asc", ["3", "1", "2", "4"]),  # ties newest first
    ("jobid", "asc", ["1", "2", "3", "4"]),
    ("start", "asc", ["1", "2", "3", "4"]),
])
def test_it_sorts_by_any_column(usage_site: UsageSite, sort: str, order: str,
                                expected: list[str]) -> None:
    three_jobs(usage_site)
    answer = client_of("alice").get(f"/usage/users/alice/?sort={sort}&order={order}")
    assert job_ids(answer) == expected


def test_it_links_each_heading_to_its_sort_keeping_the_filters(usage_site: UsageSite) -> None:
    three_jobs(usage_site)
    content = client_of("alice").get(
        "/usage/users/alice/?days=7&state=COMPLETED&sort=cpu_efficiency&order=asc&page=1"
    ).content.decode()
    assert ('<a href="?days=7&amp;state=COMPLETED&amp;sort=cpu_efficiency&amp;order=desc">'
            "CPU eff.</a> ▲") in content  # a second click reverses
    assert '<a href="?days=7&amp;state=COMPLETED&amp;sort=memory_efficiency&amp;order=asc">' \
        in content  # efficiencies start with the least efficient
    assert '<a href="?days=7&amp;state=COMPLETED&amp;sort=elapsed&amp;order=desc">' in content


def test_it_filters_by_state_and_counts_each_state(usage_site: UsageSite) -> None:
    three_jobs(usage_site)
    answer = client_of("alice").get("/usage/users/alice/?state=FAILED")
    assert job_ids(answer) == ["2"]
    content = answer.content.decode()
    assert '<option value="FAILED" selected>FAILED (1)</option>' in content
    assert '<option value="COMPLETED">COMPLETED (2)</option>' in content
    assert '<option value="TIMEOUT">TIMEOUT (0)</option>' in content
    assert "4 jobs that ran in the last 30 days, 1 of them FAILED" in text_of(answer)
    both = client_of("bob").get("/usage/users/bob/?state=FAILED&state=COMPLETED")
    assert job_ids(both) == ["9"]


def test_it_filters_by_dates(usage_site: UsageSite) -> None:
    now = three_jobs(usage_site)
    until = (now - 3 * DAY).date().isoformat()
    since = (now - 10 * DAY).date().isoformat()
    answer = client_of("alice").get(f"/usage/users/alice/?since={since}&until={until}")
    assert answer.status_code == 200
    assert job_ids(answer) == ["2", "1"]
    assert f"that ran since {since} and started by {until}" in text_of(answer)
    content = answer.content.decode()
    assert f'name="since" value="{since}"' in content and 'name="days" min="1" max="366" ' \
        'value=""' in content


def test_it_cuts_a_long_list_into_pages_with_counts(usage_site: UsageSite) -> None:
    start = datetime.now(timezone.utc).replace(microsecond=0) - 2 * DAY
    for number in range(1, 251):
        usage_site.job(str(number), start=start + timedelta(minutes=number))
    client = client_of("alice")
    first = client.get("/usage/users/alice/")
    assert len(job_ids(first)) == PAGE_SIZE == 100
    assert job_ids(first)[0] == "250"
    assert "Showing 1 to 100 (page 1 of 3)" in text_of(first)
    assert '<a href="?days=30&amp;sort=start&amp;order=desc&amp;page=2">Next</a>' in \
        first.content.decode()
    last = client.get("/usage/users/alice/?page=3")
    assert job_ids(last)[-1] == "1" and len(job_ids(last)) == 50
    assert "Showing 201 to 250 (page 3 of 3)" in text_of(last)
    assert "Previous" in text_of(last) and "Next" not in text_of(last)
    beyond = client.get("/usage/users/alice/?page=99")
    assert beyond.status_code == 200 and job_ids(beyond) == job_ids(last)


def test_it_says_when_no_job_matches(usage_site: UsageSite) -> None:
    three_jobs(usage_site)
    answer = client_of("alice").get("/usage/users/alice/?state=TIMEOUT")
    assert answer.status_code == 200 and job_ids(answer) == []
    assert "No jobs match." in text_of(answer)


@pytest.mark.parametrize(("query", "message"), [
    ("days=0", "days must be a whole number from 1 to 366"),
    ("days=abc", "days must be a whole number from 1 to 366"),
    ("days=1&days=2", "days is given 2 times"),
    ("sort=password", "sort must be one of jobid, name, state"),
    ("order=up", "order must be asc or desc"),
    ("page=0", "page must be a whole number from 1"),
    ("page=-1", "page must be a whole number from 1"),
    ("since=2026-13-01", "since must be a date like 2026-11-29, not '2026-13-01'"),
    ("since=2000-01-01", "since must be within the last 366 days"),
    ("since=2999-01-01", "since is in the future"),
    ("until=2000-01-01", "until must not be before since"),
    ("state=completed", "not a job state: 'completed'"),
    ("state=%3Cscript%3E", "not a job state: '<script>'"),
])
def test_it_answers_a_bad_parameter_with_a_400_page_naming_it(
        usage_site: UsageSite, query: str, message: str) -> None:
    three_jobs(usage_site)
    answer = client_of("alice").get(f"/usage/users/alice/?{query}")
    assert answer.status_code == 400
    assert message.capitalize() in text_of(answer)
    assert "<script>" not in answer.content.decode()
    assert "choose the filter again" in text_of(answer)


def test_it_escapes_a_hostile_job_name_in_the_table(usage_site: UsageSite) -> None:
    usage_site.job("1", name="<script>alert(1)</script>")
    content = client_of("alice").get("/usage/users/alice/").content.decode()
    assert "<script" not in content and "&lt;script&gt;alert(1)&lt;/script&gt;" in content


def test_it_answers_another_users_list_as_no_such_user(usage_site: UsageSite) -> None:
    three_jobs(usage_site)
    client = client_of("alice")
    other, nobody = client.get("/usage/users/bob/"), client.get("/usage/users/nobody/")
    assert other.status_code == nobody.status_code == 404
    assert without_csrf(other.content) == without_csrf(nobody.content)
    assert "No user with this name whose jobs you may see." in text_of(other)
    staff = client_of("root", staff=True).get("/usage/users/bob/")
    assert staff.status_code == 200 and job_ids(staff) == ["9"]
    assert client.get("/usage/users/a%20b/").status_code == 400


def test_it_shows_a_503_page_when_accounting_fails(usage_site: UsageSite) -> None:
    usage_site.fail("sacct: error: slurmdbd: Connection refused")
    answer = client_of("alice").get("/usage/users/alice/")
    assert answer.status_code == 503
    assert "Accounting is not available: sacct failed" in text_of(answer)
    assert "Connection refused" in text_of(answer)


def test_it_sends_anonymous_visitors_to_the_login_page(usage_site: UsageSite) -> None:
    answer = Client().get("/usage/users/alice/?days=7")
    assert answer.status_code == 302
    assert answer["Location"] == "/accounts/login/?next=/usage/users/alice/%3Fdays%3D7"


def test_it_keeps_gib_figures_readable(usage_site: UsageSite) -> None:
    usage_site.job("1", req_mem=f"{GiB * 3 // 1024**2}M")
    assert "3.0 GiB" in text_of(client_of("alice").get("/usage/users/alice/"))
