"""A job's name is a C string its user typed: every byte but NUL, line ends and `|` included
(issue 19, item 17). Whatever it holds, it must neither add a row (a job under another user's
id in its author's list), split or drop one, nor make its author's pages answer 503; bytes
that are not UTF-8 are replaced in the name alone."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone as django_timezone

from clusterwatch.monitor.usage.accounting_source import accounting
from clusterwatch.monitor.usage.mail.poll import poll
from clusterwatch.monitor.usage.models import UsageMail
from tests.monitor.usage.mail_support import MailSite, sender
from tests.monitor.usage.page_support import client_of
from tests.monitor.usage.sacct_support import values

EVERY_BYTE = bytes(range(1, 256))  # a name holds any of them; NUL ends a C string
SEPARATORS = "\u2028\u2029\u0085\r\n\x0b\x0c\x1c\x1d\x1e"


def forged_name(start: int, raw_bytes: bytes) -> str:
    """Every byte (as sacct prints it: raw), every line separator, and whole lines written
    as the old `|` output would have them: alice's job 700 filed under mallory, a line whose
    Start is not a time, and a line of too many fields."""
    raw = raw_bytes.decode("utf-8", "surrogateescape")
    theirs = "|".join(values(JobID="700", JobIDRaw="700", User="mallory", Start=str(start)))
    broken = "|".join(values(JobID="9001", JobIDRaw="9001", User="mallory", Start="notatime"))
    return f"{raw}{SEPARATORS}\n{theirs}\n{broken}\n{'|' * 40}\n9002|9002|mallory"


def shown(name: str) -> str:
    """The name as the monitor reads it: undecodable bytes replaced, nothing else changed."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


@pytest.mark.django_db
@pytest.mark.parametrize("raw_bytes", [EVERY_BYTE, bytes(range(1, 128))],
                         ids=["bytes-1-255", "ascii-only"])
def test_a_name_holding_every_byte_and_forged_lines_adds_splits_and_drops_no_row(
        mail_site: MailSite, raw_bytes: bytes) -> None:
    site = mail_site.site
    now = django_timezone.now().replace(microsecond=0)
    start = now - timedelta(minutes=95)  # ended within the first run's hour
    name = forged_name(int(start.timestamp()), raw_bytes)
    site.job("700", user="alice", start=start)
    site.job("701", user="mallory", start=start, name=name)
    site.job("702", user="mallory", start=start + timedelta(minutes=1), name="plain")

    mallory = client_of("mallory")
    answer = mallory.get("/api/v1/users/mallory")
    assert answer.status_code == 200, answer.content
    listed = answer.json()
    assert [(job["jobid"], job["user"]) for job in listed["jobs"]] == [
        ("702", "mallory"), ("701", "mallory")]
    assert listed["jobs"][1]["name"] == shown(name)
    assert listed["unreadable"] == [] and listed["cut"] is False
    page = mallory.get("/usage/users/mallory/")
    assert page.status_code == 200
    assert "/usage/jobs/700/" not in page.content.decode()

    source = accounting(sender().config)
    assert source.job("701").name == shown(name)
    assert (source.job("700").user, source.job("700").name) == ("alice", "analysis")
    found = poll(source, sender().mail, now)
    assert (found.ended, found.queued, found.unreadable) == (3, 3, [])
    assert set(UsageMail.objects.values_list("jobid", "user")) == {
        ("700", "alice"), ("701", "mallory"), ("702", "mallory")}
