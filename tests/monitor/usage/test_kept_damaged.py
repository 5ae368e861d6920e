"""A kept summary whose document is damaged (edited by hand, restored from a bad backup) or of
an older shape (a key a later version reads is missing): no path answers 500. The job is
reported again from accounting and Prometheus as if nothing were kept, and the row is
replaced by the new document once the job's figures are final; the lists show what they can."""

from __future__ import annotations

from typing import Any

import pytest

from clusterwatch.monitor.usage.analysis.summary_json import kept_document
from clusterwatch.monitor.usage.models import KeptSummary
from tests.monitor.usage.page_support import client_of
from tests.monitor.usage.site import UsageSite

pytestmark = pytest.mark.django_db

JOB_PATHS = ("/api/v1/jobs/4242/usage", "/usage/jobs/4242/", "/pdf/4242", "/pie/4242/",
             "/plot/4242/cpu", "/mail/4242")
LIST_PATHS = ("/api/v1/users/alice", "/usage/users/alice/", "/")


def good_document(usage_site: UsageSite) -> dict[str, Any]:
    start, end = usage_site.job("4242")
    usage_site.measured("4242", start, end, busy_cpus=1.0, memory_bytes=1024**3)
    client_of("operator", staff=True).get("/api/v1/jobs/4242/usage")  # kept on reading
    document: dict[str, Any] = KeptSummary.objects.get(jobid="4242").document
    return document


def damaged(good: dict[str, Any]) -> dict[str, object]:
    without_memory = {key: value for key, value in good.items() if key != "memory"}
    return {"a string": "garbage", "a list": [1, 2], "a number": 7, "empty": {},
            "older shape": without_memory,
            "warnings not a list": {**good, "warnings": "low_cpu_efficiency"},
            "a warning without advice": {**good, "warnings": [{"code": "bursty_cpu"}]},
            "user not a string": {**good, "user": ["alice"]},
            # Kept from a series scaled by 1e300 before such readings were refused.
            "a number past a double": {**good, "memory_peak_bytes": 3 * 10**309}}


@pytest.mark.parametrize("kind", ["a string", "a list", "a number", "empty", "older shape",
                                  "warnings not a list", "a warning without advice",
                                  "user not a string", "a number past a double"])
def test_no_path_answers_500_and_the_job_is_reported_again(usage_site: UsageSite,
                                                           kind: str) -> None:
    good = good_document(usage_site)
    KeptSummary.objects.filter(jobid="4242").update(document=damaged(good)[kind])
    assert kept_document(KeptSummary.objects.get(jobid="4242").document) is None
    operator = client_of("staff", staff=True)
    operator.raise_request_exception = False
    assert operator.get("/usage/staff/").status_code == 200
    alice = client_of("alice")
    alice.raise_request_exception = False
    for path in (*LIST_PATHS, *JOB_PATHS):
        assert alice.get(path).status_code == 200, path
    again = alice.get("/api/v1/jobs/4242/usage").json()
    again.pop("peer_ranks")  # computed for each answer, never kept
    assert again == good
    assert KeptSummary.objects.get(jobid="4242").document == good


def test_a_damaged_summary_while_accounting_is_down_is_a_503(usage_site: UsageSite) -> None:
    good_document(usage_site)
    KeptSummary.objects.filter(jobid="4242").update(document={"jobid": "4242"})
    usage_site.fail("sacct: error: slurmdbd is down")
    alice = client_of("alice")
    alice.raise_request_exception = False
    for path in JOB_PATHS:
        assert alice.get(path).status_code == 503, path


def test_a_document_of_every_key_is_usable_and_jobid_raw_may_be_missing(
        usage_site: UsageSite) -> None:
    good = good_document(usage_site)
    assert kept_document(good) == good
    older = {key: value for key, value in good.items() if key != "jobid_raw"}
    assert kept_document(older) == older
