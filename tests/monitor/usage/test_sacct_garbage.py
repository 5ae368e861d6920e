"""Output no sacct writes, from a broken program or database: numbers too large for a float
or a date, times at the end of the calendar, NUL bytes. Each is an AccountingFailed naming
the field (a 503 on the API, exit 1 from job_usage), never an OverflowError (a 500), and
nothing of it reaches the database (PostgreSQL refuses a NUL in text)."""

from __future__ import annotations

import pytest

from clusterwatch.monitor.usage.accounting.interface import AccountingFailed
from clusterwatch.monitor.usage.accounting.sacct_parse import find_job, parse_sacct
from tests.monitor.usage.page_support import client_of
from tests.monitor.usage.sacct_support import SEP, line
from tests.monitor.usage.site import UsageSite

HUGE = "9" * 400
UNREADABLE = [
    ("Start", "9" * 30),  # past what a date holds
    ("End", "9" * 30),
    ("End", "253402300799"),  # 9999-12-31: no date can follow it
    ("Elapsed", f"{HUGE}-00:00:00"),
    ("AllocCPUS", HUGE),
    ("NNodes", HUGE),
    ("MaxRSS", HUGE),  # a float's infinity
    ("MaxRSS", f"{HUGE}K"),
    ("ReqTRES", f"cpu=2,mem={HUGE}M"),
    ("AllocTRES", f"gres/gpu={HUGE}"),
    ("TotalCPU", f"{HUGE}:00"),
    ("Timelimit", f"{HUGE}-00:00:00"),
]


@pytest.mark.parametrize(("field", "value"), UNREADABLE,
                         ids=[f"{field}-{value[:14]}" for field, value in UNREADABLE])
def test_it_refuses_a_value_no_sacct_writes_naming_its_field(field: str, value: str) -> None:
    text = line(**{field: value}) + "\n"
    listing = parse_sacct(text, SEP)
    expected = "ReqMem" if field == "ReqTRES" else field
    [lost] = listing.unreadable
    assert listing == [] and lost.reason.startswith(f"sacct line 1: field {expected}:")
    assert HUGE not in lost.reason
    with pytest.raises(AccountingFailed) as refused:
        find_job(text, "4242", SEP)
    assert f"sacct line 1: field {expected}:" in str(refused.value)
    assert HUGE not in str(refused.value)


@pytest.mark.django_db
@pytest.mark.parametrize(("field", "value"), [("Start", "9" * 30), ("MaxRSS", HUGE),
                                              ("AllocCPUS", HUGE), ("End", "253402300799"),
                                              ("JobName", "nul\x00byte")])
def test_every_path_of_the_job_answers_503_to_garbage_and_its_list_leaves_it_out(
        usage_site: UsageSite, field: str, value: str) -> None:
    usage_site.job("4242")
    usage_site.job("4243")
    usage_site.change("4242", **{field: value})
    client = client_of("alice")
    client.raise_request_exception = False
    for path in ("/api/v1/jobs/4242/usage", "/usage/jobs/4242/", "/pdf/4242", "/pie/4242/",
                 "/plot/4242/cpu", "/mail/4242"):
        answer = client.get(path)
        assert answer.status_code == 503, (path, answer.status_code)
        assert b"ccounting is not available: sacct" in answer.content, path
    # One bad line spoils no other job: the list shows the rest and says what it left out.
    listed = client.get("/api/v1/users/alice")
    assert listed.status_code == 200, listed.content
    assert [job["jobid"] for job in listed.json()["jobs"]] == ["4243"]
    [lost] = listed.json()["unreadable"]
    assert lost["jobid"] == "4242" and lost["reason"].startswith("sacct line 1: ")
    assert HUGE not in lost["reason"] and "\x00" not in lost["reason"]
    page = client.get("/usage/users/alice/")
    assert page.status_code == 200
    assert ("1 line of accounting could not be read and is left out: job 4242."
            in page.content.decode())
