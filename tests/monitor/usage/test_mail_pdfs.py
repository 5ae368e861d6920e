"""Each job's PDF is drawn once whoever asks first (issue 19, item 13): an email takes the
PDF that `/pdf/<jobid>` drew, the page takes the email's, and two emails of one run with the
same PDF share one drawing, in the run's own process or on its workers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone as django_timezone

from clusterwatch.monitor.usage.config import get_config
from clusterwatch.monitor.usage.mail import outbox as mail_outbox
from clusterwatch.monitor.usage.mail.delivery import MailOutcome, deliver_due
from clusterwatch.monitor.usage.mail.pdfs import RunPdfs
from clusterwatch.monitor.usage.rendering import rendered
from clusterwatch.monitor.usage.usage_report import load_report
from tests.monitor.usage.mail_support import DOMAIN, MailSite, parts, sender
from tests.monitor.usage.site import UsageSite

pytestmark = pytest.mark.django_db
JOBID = "4242"


def ended_job(site: UsageSite, jobid: str = JOBID) -> None:
    start, end = site.job(jobid)
    site.measured(jobid, start, end, busy_cpus=1.0, memory_bytes=200 * 1024**2)


def alice() -> Client:
    client = Client()
    client.force_login(User.objects.create_user("alice"))
    return client


def no_drawing(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """From now on a PDF drawn in this process is counted and fails its caller."""
    drawn: list[str] = []

    def refuse(document: Any, *_args: Any) -> bytes:
        drawn.append(document["jobid"])
        raise AssertionError(f"the PDF of job {document['jobid']} was drawn again")

    monkeypatch.setattr(rendered, "render_pdf", refuse)
    return drawn


def mailed_pdf(mail_site: MailSite) -> bytes:
    mail_outbox.enqueue(
        JOBID,
        user="alice",
        recipient=f"alice@{DOMAIN}",
        trigger="mailprog",
        now=django_timezone.now(),
    )
    results = deliver_due(sender(), django_timezone.now())
    assert [(r.jobid, r.outcome) for r in results] == [(JOBID, MailOutcome.SENT)], results
    [message] = mail_site.smtp.wait_for(1)
    pdf: bytes = parts(message)["attachments"][f"job-{JOBID}-usage.pdf"]
    return pdf


def test_an_email_takes_the_pdf_the_page_drew(
    mail_site: MailSite, monkeypatch: pytest.MonkeyPatch
) -> None:
    ended_job(mail_site.site)
    page = alice().get(f"/pdf/{JOBID}")
    assert page.status_code == 200 and page.content.startswith(b"%PDF")
    drawn = no_drawing(monkeypatch)
    assert mailed_pdf(mail_site) == page.content
    assert drawn == []


def test_the_page_takes_the_pdf_an_email_drew(
    mail_site: MailSite, monkeypatch: pytest.MonkeyPatch
) -> None:
    ended_job(mail_site.site)
    attached = mailed_pdf(mail_site)
    drawn = no_drawing(monkeypatch)
    page = alice().get(f"/pdf/{JOBID}")
    assert page.status_code == 200 and page.content == attached
    assert drawn == []


@pytest.mark.parametrize("workers", [1, 2], ids=["in-process", "workers"])
def test_a_pdf_two_emails_of_a_run_share_is_drawn_once(
    usage_site: UsageSite, tmp_path: Path, workers: int
) -> None:
    ended_job(usage_site)
    report = load_report(JOBID, config=get_config())
    assert report.series is not None
    with RunPdfs(tmp_path / "cache", workers) as pdfs:
        tickets = [pdfs.order(report.document, report.series, report.series_note) for _ in range(2)]
        first, second = (pdfs.take(ticket) for ticket in tickets)
        assert (pdfs.drawn, pdfs.cached) == (1, 0)
    assert first == second and first.startswith(b"%PDF")
    assert [p.name.startswith("pdf") for p in (tmp_path / "cache").iterdir()] == [True]
    with RunPdfs(tmp_path / "cache", workers) as later:  # the next run: from the cache
        ticket = later.order(report.document, report.series, report.series_note)
        assert later.take(ticket) == first and (later.drawn, later.cached) == (0, 1)
