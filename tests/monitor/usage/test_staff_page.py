"""The staff page /usage/staff/: the least efficient recent jobs of every user, from the kept
summaries, sorted by CPU or memory efficiency, filtered by warning and days; staff only."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from django.test import Client

from clusterwatch.monitor.usage.models import KeptSummary
from clusterwatch.monitor.usage.web.staff_rows import STAFF_ROWS
from tests.monitor.usage.page_support import client_of, job_ids, text_of
from tests.monitor.usage.site import GiB, UsageSite

pytestmark = pytest.mark.django_db


def kept_jobs(site: UsageSite, staff: Client) -> None:
    """Kept summaries of jobs 1 (alice, 25 % CPU, 2.5 % memory), 2 (bob, 100 %, 75 %) and
    3 (carol, 50 %, 50 %), all of 2 CPUs and 8 GiB, kept by opening their pages."""
    for jobid, user, busy, memory in (("1", "alice", 0.5, 0.2 * GiB), ("2", "bob", 2.0, 6 * GiB),
                                      ("3", "carol", 1.0, 4 * GiB)):
        start, end = site.job(jobid, user=user, cpus=2, req_mem="8G")
        site.measured(jobid, start, end, busy_cpus=busy, memory_bytes=memory)
        assert staff.get(f"/usage/jobs/{jobid}/").status_code == 200
    assert KeptSummary.objects.count() == 3


def copy_of(jobid: str, new_id: str, **changes: Any) -> KeptSummary:
    """Another kept row made from job `jobid`'s, with `changes` to its columns."""
    kept = KeptSummary.objects.get(jobid=jobid)
    document = dict(kept.document, jobid=new_id)
    columns = {field: getattr(kept, field) for field in (
        "user", "account", "state", "start", "end", "cpu_efficiency", "memory_efficiency",
        "warning_codes")}
    copy: KeptSummary = KeptSummary.objects.create(jobid=new_id, document=document,
                                                   **{**columns, **changes})
    return copy


def test_it_lists_the_least_cpu_efficient_jobs_first_with_user_links(
        usage_site: UsageSite) -> None:
    staff = client_of("root", staff=True)
    kept_jobs(usage_site, staff)
    answer = staff.get("/usage/staff/")
    assert answer.status_code == 200
    assert job_ids(answer) == ["1", "3", "2"]
    content = answer.content.decode()
    for user in ("alice", "bob", "carol"):
        assert f'<a href="/usage/users/{user}/">{user}</a>' in content
    text = text_of(answer)
    assert ("The 3 least efficient by CPU efficiency of 3 kept jobs that ended in the last "
            "7 days") in text
    assert re.search(r"1 alice physics COMPLETED \S+ \S+ UTC 2 25\.0 % 8\.0 GiB 2\.5 % 1 h "
                     r"Low CPU efficiency Memory over-requested 3 carol", text)


def test_it_sorts_by_memory_efficiency(usage_site: UsageSite) -> None:
    staff = client_of("root", staff=True)
    kept_jobs(usage_site, staff)
    answer = staff.get("/usage/staff/?sort=memory_efficiency")
    assert job_ids(answer) == ["1", "3", "2"]
    assert "least efficient by memory efficiency" in text_of(answer)
    KeptSummary.objects.filter(jobid="3").update(memory_efficiency=0.01)
    assert job_ids(staff.get("/usage/staff/?sort=memory_efficiency")) == ["3", "1", "2"]
    assert job_ids(staff.get("/usage/staff/?sort=cpu_efficiency")) == ["1", "3", "2"]


def test_it_filters_by_warning_code_as_a_whole_word(usage_site: UsageSite) -> None:
    staff = client_of("root", staff=True)
    kept_jobs(usage_site, staff)
    assert job_ids(staff.get("/usage/staff/?warning=low_cpu_efficiency")) == ["1", "3"]
    assert job_ids(staff.get("/usage/staff/?warning=memory_over_request")) == ["1"]
    copy_of("2", "20", warning_codes="idle_gpu")
    copy_of("2", "21", warning_codes="no_scratch idle_gpu bursty_cpu")
    copy_of("2", "22", warning_codes="not_idle_gpu_really")  # never a code inside another
    assert sorted(job_ids(staff.get("/usage/staff/?warning=idle_gpu"))) == ["20", "21"]
    assert "with the warning idle_gpu" in text_of(staff.get("/usage/staff/?warning=idle_gpu"))


def test_it_keeps_to_the_days_asked_and_leaves_out_unmeasured_figures(
        usage_site: UsageSite) -> None:
    staff = client_of("root", staff=True)
    kept_jobs(usage_site, staff)
    ended = datetime.now(timezone.utc) - timedelta(days=10)
    copy_of("1", "30", end=ended)
    copy_of("1", "31", cpu_efficiency=None)
    assert "30" not in job_ids(staff.get("/usage/staff/"))
    assert job_ids(staff.get("/usage/staff/?days=14"))[:2] == ["1", "30"]  # ties: newest first
    assert "31" not in job_ids(staff.get("/usage/staff/?days=14"))
    assert "31" in job_ids(staff.get("/usage/staff/?sort=memory_efficiency"))


def test_it_shows_at_most_its_rows_and_says_how_many_matched(usage_site: UsageSite) -> None:
    staff = client_of("root", staff=True)
    kept_jobs(usage_site, staff)
    for number in range(STAFF_ROWS + 5):
        copy_of("2", str(100 + number), cpu_efficiency=0.9 + number / 10_000)
    text = text_of(staff.get("/usage/staff/"))
    assert len(job_ids(staff.get("/usage/staff/"))) == STAFF_ROWS
    assert f"of {STAFF_ROWS + 8} kept jobs" in text and f"at most {STAFF_ROWS} are shown" in text


def test_it_escapes_what_a_kept_row_holds(usage_site: UsageSite) -> None:
    staff = client_of("root", staff=True)
    kept_jobs(usage_site, staff)
    copy_of("1", "40", account="<b>bold</b>", user="o'hara")
    content = staff.get("/usage/staff/").content.decode()
    assert "<b>bold</b>" not in content and "&lt;b&gt;bold&lt;/b&gt;" in content
    assert 'href="/usage/users/o%27hara/"' in content


def test_it_is_a_404_to_everyone_but_staff(usage_site: UsageSite) -> None:
    kept_jobs(usage_site, client_of("root", staff=True))
    answer = client_of("alice").get("/usage/staff/")
    assert answer.status_code == 404 and "No such page." in text_of(answer)
    anonymous = Client().get("/usage/staff/")
    assert anonymous.status_code == 302
    assert anonymous["Location"] == "/accounts/login/?next=/usage/staff/"


@pytest.mark.parametrize(("query", "message"), [
    ("days=0", "Days must be a whole number from 1 to 366"),
    ("days=400", "Days must be a whole number from 1 to 366"),
    ("sort=jobid", "Sort must be one of cpu_efficiency, memory_efficiency"),
    ("warning=oops", "Warning must be one of low_cpu_efficiency"),
])
def test_it_answers_a_bad_parameter_with_a_400_page(usage_site: UsageSite, query: str,
                                                     message: str) -> None:
    answer = client_of("root", staff=True).get(f"/usage/staff/?{query}")
    assert answer.status_code == 400 and message in text_of(answer)
