"""Every answer that shows one person's report is `Cache-Control: private, no-store`: no
shared cache keeps it, and no browser keeps a copy after logout on a shared machine. The API
and the drawings were; the email page (/mail/, which a token reads like the API) and the
pages showing the same figures (the job, user and staff pages) were not."""

from __future__ import annotations

import pytest

from tests.monitor.usage.page_support import client_of
from tests.monitor.usage.site import UsageSite

pytestmark = pytest.mark.django_db

PATHS = ("/", "/api/v1/jobs/4242/usage", "/api/v1/users/alice", "/pdf/4242", "/pie/4242/",
         "/plot/4242/cpu", "/mail/4242", "/usage/jobs/4242/", "/usage/users/alice/",
         "/usage/staff/")


@pytest.mark.parametrize("path", PATHS)
def test_a_report_is_never_kept_by_a_cache(usage_site: UsageSite, path: str) -> None:
    start, end = usage_site.job("4242")
    usage_site.measured("4242", start, end, busy_cpus=1.0, memory_bytes=1024**3)
    answer = client_of("alice", staff=True).get(path)
    assert answer.status_code == 200
    directives = {part.strip() for part in answer["Cache-Control"].split(",")}
    assert {"private", "no-store"} <= directives, (path, answer["Cache-Control"])


@pytest.mark.parametrize("path", ["/mail/4242", "/usage/jobs/4242/", "/usage/users/bob/"])
def test_a_refusal_page_is_not_kept_either(usage_site: UsageSite, path: str) -> None:
    usage_site.job("4242")
    answer = client_of("mallory").get(path)
    assert answer.status_code == 404
    assert "no-store" in answer.get("Cache-Control", "")
