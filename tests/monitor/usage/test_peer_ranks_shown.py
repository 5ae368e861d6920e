"""The peer ranks as the monitor shows them: the API's `peer_ranks` key, the job page, the
end-of-job email's text and HTML parts (sent to a real SMTP server) and /mail/<jobid>, each
equal to analysis/peer_rank.py's ranks over the seeded rows read back by raw SQL; one query
for the peers per job page; null for a running job or one without a partition; never kept."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone as django_timezone

from clusterwatch.monitor.usage.analysis.peer_rank import PeerJob, peer_ranks
from clusterwatch.monitor.usage.mail import outbox as mail_outbox
from clusterwatch.monitor.usage.mail.delivery import MailOutcome, deliver_due
from clusterwatch.monitor.usage.models import KeptSummary
from tests.monitor.usage.accounts_support import raw_rows, seeded_jobs
from tests.monitor.usage.mail_support import DOMAIN, MailSite, parts, sender
from tests.monitor.usage.page_support import client_of, text_of
from tests.monitor.usage.site import UsageSite

pytestmark = pytest.mark.django_db
UTC = timezone.utc


def partition_job(site: UsageSite, jobid: str = "4242", partition: str = "cpu") -> None:
    """Alice's job, ended a day ago on `partition`, after 120 peers ended in the 28 days
    before it (on cpu and gpu, some without figures)."""
    start, end = site.job(jobid, cpus=2, req_mem="8G")
    site.change(jobid, Partition=partition)
    site.measured(jobid, start, end, busy_cpus=1.0, memory_bytes=1024**3)
    seeded_jobs(120, seed=31, begin=end - timedelta(days=29), days=28)


def independent(jobid: str) -> dict[str, str]:
    """peer_rank's texts for the job over every kept row, read by raw SQL (not the query the
    monitor runs: its window and partition filter are peer_rank's own)."""
    rows = raw_rows()
    [own] = [row for row in rows if row.jobid == jobid]

    def peer(row: Any) -> PeerJob:
        return PeerJob(row.jobid, str(row.document.get("partition")), row.end,
                       row.cpu_efficiency, row.memory_efficiency)

    ranks = peer_ranks(peer(own), [peer(row) for row in rows])
    return {metric: rank.text() for metric, rank in ranks.items()}


def test_the_api_page_and_mail_page_show_peer_ranks_of_the_seeded_rows(
        usage_site: UsageSite) -> None:
    partition_job(usage_site)
    alice = client_of("alice")
    document = alice.get("/api/v1/jobs/4242/usage").json()  # keeps the job
    want = independent("4242")
    ranks = document["peer_ranks"]
    assert (ranks["partition"], ranks["window_days"], ranks["minimum_peers"]) == ("cpu", 30, 20)
    for metric in ("cpu_efficiency", "memory_efficiency"):
        assert ranks[metric]["text"] == want[metric]
        assert ranks[metric]["measured"] is True and ranks[metric]["peers"] >= 20
        assert ranks[metric]["better_than_percent"] is not None
    assert want["cpu_efficiency"].startswith("better than ")
    # Never kept: the summary is the job's own figures.
    assert "peer_ranks" not in KeptSummary.objects.get(jobid="4242").document
    with CaptureQueriesContext(connection) as queries:
        page = alice.get("/usage/jobs/4242/")
    assert page.status_code == 200
    text = text_of(page)
    assert f"CPU efficiency {want['cpu_efficiency']}" in text
    assert f"Memory efficiency {want['memory_efficiency']}" in text
    peers = [q["sql"] for q in queries.captured_queries if "partition" in q["sql"]]
    assert len(peers) == 1, peers  # one query for the 120 rows, not one per peer
    mail = alice.get("/mail/4242").content.decode()
    assert mail.count(want["cpu_efficiency"]) == 2  # the HTML part and the text part
    assert "How it compares with the jobs of partition cpu" in mail


def test_a_running_job_and_one_without_a_partition_have_null_ranks(
        usage_site: UsageSite) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    usage_site.job("1", start=now - timedelta(hours=1), running=True, state="RUNNING")
    usage_site.change("1", Partition="cpu")
    usage_site.job("2")
    usage_site.change("2", Partition="")  # sacct printed no partition
    seeded_jobs(40, seed=3, begin=now - timedelta(days=20), days=19)
    alice = client_of("alice")
    for jobid in ("1", "2"):
        assert alice.get(f"/api/v1/jobs/{jobid}/usage").json()["peer_ranks"] is None
    assert "No comparison: the job is still running." in text_of(alice.get("/usage/jobs/1/"))


def test_the_end_of_job_email_says_the_ranks_in_both_parts(mail_site: MailSite) -> None:
    partition_job(mail_site.site)
    mail_outbox.enqueue("4242", user="alice", recipient=f"alice@{DOMAIN}",
                        trigger="mailprog", now=django_timezone.now())
    results = deliver_due(sender(), django_timezone.now())
    assert [r.outcome for r in results] == [MailOutcome.SENT]
    want = independent("4242")
    [message] = mail_site.smtp.wait_for(1)
    found = parts(message)
    for metric, label in (("cpu_efficiency", "CPU efficiency"),
                          ("memory_efficiency", "Memory efficiency")):
        assert f"  {label}: {want[metric]}" in found["text"]
        assert f"{label}</th>" in found["html"]
        assert f"{want[metric]}</td>" in found["html"]
    assert "How it compares with the jobs of partition cpu that ended in the 30 days" in \
        found["text"]
