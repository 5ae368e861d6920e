"""The end-of-job email delivered to a real SMTP server (aiosmtpd on loopback): its parts and
PDF, once per job whoever asks, waiting for final figures, retried when SMTP fails."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from django.utils import timezone as django_timezone

from clusterwatch.monitor.usage.accounting_source import accounting
from clusterwatch.monitor.usage.config import get_config
from clusterwatch.monitor.usage.mail import outbox as mail_outbox
from clusterwatch.monitor.usage.mail.delivery import MailOutcome, deliver, deliver_due
from clusterwatch.monitor.usage.mail.poll import OVERLAP, poll
from clusterwatch.monitor.usage.models import UsageMail
from tests.monitor.usage.mail_support import (
    DOMAIN,
    MailSite,
    mail_settings,
    parts,
    pdf_text,
    sender,
)
from tests.monitor.usage.site import GiB

pytestmark = pytest.mark.django_db


def ended_job(mail_site: MailSite, jobid: str = "4242", **options: object) -> None:
    start, end = mail_site.site.job(jobid, **options)  # type: ignore[arg-type]
    mail_site.site.measured(jobid, start, end, busy_cpus=1.0, memory_bytes=200 * 1024**2)


def queue(jobid: str = "4242", trigger: str = "mailprog") -> UsageMail:
    row, _created = mail_outbox.enqueue(jobid, user="alice", recipient=f"alice@{DOMAIN}",
                                        trigger=trigger, now=django_timezone.now())
    return row


def test_it_sends_text_and_html_parts_with_the_pdf_attached(mail_site: MailSite,
                                                            tmp_path: Path) -> None:
    ended_job(mail_site, cpus=2, req_mem="8G")
    queue()
    results = deliver_due(sender(), django_timezone.now())
    assert [(r.jobid, r.outcome) for r in results] == [("4242", MailOutcome.SENT)]
    [message] = mail_site.smtp.wait_for(1)
    assert message["To"] == f"alice@{DOMAIN}" and message["From"] == "clusterwatch@monitor.test"
    assert message["Subject"].startswith("Job 4242 (analysis) COMPLETED: used 50% of its CPUs")
    assert message["Auto-Submitted"] == "auto-generated"
    found = parts(message)
    assert "low CPU efficiency" in found["text"].replace("Low", "low")
    assert "https://monitor.test/usage/jobs/4242/" in found["text"]
    assert 'href="https://monitor.test/pdf/4242"' in found["html"]
    assert "<style" not in found["html"] and "<img" not in found["html"]
    pdf = found["attachments"]["job-4242-usage.pdf"]
    assert pdf.startswith(b"%PDF")
    assert "4242" in pdf_text(pdf, tmp_path)
    row = UsageMail.objects.get(jobid="4242")
    assert row.state == UsageMail.SENT and row.sent_at is not None and row.claim == ""


def test_it_keeps_the_email_while_smtp_is_down_and_sends_it_once_when_back(
        mail_site: MailSite) -> None:
    ended_job(mail_site)
    queue()
    mail_site.smtp.down()
    now = django_timezone.now()
    assert [r.outcome for r in deliver_due(sender(), now)] == [MailOutcome.RETRY]
    row = UsageMail.objects.get(jobid="4242")
    assert (row.state, row.attempts) == (UsageMail.PENDING, 1)
    assert "unreachable" in row.last_error and row.next_attempt_at == now + timedelta(minutes=1)
    assert deliver_due(sender(), now + timedelta(seconds=30)) == []  # not due yet
    outcomes = [r.outcome for r in deliver_due(sender(), now + timedelta(minutes=1))]
    assert outcomes == [MailOutcome.RETRY]
    assert UsageMail.objects.get(jobid="4242").next_attempt_at == now + timedelta(minutes=3)
    mail_site.smtp.up()
    later = now + timedelta(minutes=3)
    assert [r.outcome for r in deliver_due(sender(), later)] == [MailOutcome.SENT]
    assert deliver_due(sender(), later + timedelta(hours=1)) == []
    assert len(mail_site.smtp.wait_for(2, timeout=1)) == 1


def test_it_retries_a_refused_send_and_gives_up_after_the_documented_attempts(
        mail_site: MailSite, caplog: pytest.LogCaptureFixture) -> None:
    ended_job(mail_site)
    row = queue()
    mail_site.smtp.refuse("451 4.3.0 mailbox busy, try again later")
    now = django_timezone.now()
    UsageMail.objects.filter(id=row.id).update(attempts=mail_outbox.MAX_ATTEMPTS - 2)
    assert [r.outcome for r in deliver_due(sender(), now)] == [MailOutcome.RETRY]
    assert "SMTP 451" in UsageMail.objects.get(id=row.id).last_error
    outcomes = [r.outcome for r in deliver_due(sender(), now + timedelta(hours=3))]
    assert outcomes == [MailOutcome.FAILED]
    failed = UsageMail.objects.get(id=row.id)
    assert (failed.state, failed.attempts) == (UsageMail.FAILED, mail_outbox.MAX_ATTEMPTS)
    assert any("gave up" in r.getMessage() for r in caplog.records if r.levelname == "ERROR")
    assert mail_site.smtp.messages == []


def test_its_retry_delays_double_up_to_two_hours_and_give_up_after_about_three_days() -> None:
    delays = [mail_outbox.retry_delay(n) for n in range(1, mail_outbox.MAX_ATTEMPTS)]
    assert delays[:4] == [timedelta(minutes=m) for m in (1, 2, 4, 8)]
    assert max(delays) == timedelta(hours=2)
    assert timedelta(days=2.5) < sum(delays, timedelta()) < timedelta(days=3.5)


def test_it_waits_while_the_job_runs_or_its_figures_are_not_final(mail_site: MailSite) -> None:
    now = datetime.now(timezone.utc).replace(microsecond=0)
    mail_site.site.job("1", start=now - timedelta(hours=1), running=True, state="RUNNING")
    mail_site.site.job("2", start=now - timedelta(minutes=30), hours=0.49)  # ended 36 s ago
    queue("1")
    queue("2")
    results = {r.jobid: r for r in deliver_due(sender(), django_timezone.now())}
    assert results["1"].outcome is results["2"].outcome is MailOutcome.WAITING
    assert "not ended" in results["1"].detail
    rows = {row.jobid: row for row in UsageMail.objects.all()}
    assert rows["1"].state == rows["2"].state == UsageMail.PENDING
    assert rows["1"].attempts == rows["2"].attempts == 0
    end = now - timedelta(minutes=30) + timedelta(hours=0.49)
    assert rows["2"].next_attempt_at == end + timedelta(seconds=60)  # 2 scrape intervals
    outcomes = [r.outcome for r in deliver_due(sender(), end + timedelta(seconds=61))]
    assert outcomes == [MailOutcome.SENT]
    assert mail_site.smtp.wait_for(1)[0]["Subject"].startswith("Job 2 ")


def test_it_waits_for_a_job_accounting_does_not_know_yet_then_gives_up(
        mail_site: MailSite) -> None:
    row = queue("77")
    now = django_timezone.now()
    assert [r.outcome for r in deliver_due(sender(), now)] == [MailOutcome.WAITING]
    assert UsageMail.objects.get(id=row.id).attempts == 0
    outcomes = [r.outcome for r in deliver_due(sender(), now + timedelta(days=2))]
    assert outcomes == [MailOutcome.FAILED]
    assert "unknown to accounting" in UsageMail.objects.get(id=row.id).last_error


def test_it_queues_each_ended_job_once_however_often_the_poller_runs(
        mail_site: MailSite) -> None:
    start = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(minutes=30)
    mail_site.site.job("10", start=start, hours=0.25)
    mail_site.site.job("11", start=start, hours=0.25, user="bob")
    source, now = accounting(get_config()), django_timezone.now()
    first = poll(source, mail_settings(), now)
    assert (first.ended, first.queued) == (2, 2)
    again = poll(source, mail_settings(), now + timedelta(minutes=1))
    assert (again.ended, again.queued) == (0, 0)
    assert again.since == now - OVERLAP  # the last run less the overlap
    deliver_due(sender(), now)
    deliver_due(sender(), now + timedelta(minutes=1))
    received = mail_site.smtp.wait_for(3, timeout=1)
    assert sorted(m["To"] for m in received) == [f"alice@{DOMAIN}", f"bob@{DOMAIN}"]


def test_it_skips_jobs_without_warnings_when_only_warnings_are_mailed(
        mail_site: MailSite) -> None:
    start = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(minutes=30)
    mail_site.site.job("20", start=start, hours=0.25, req_mem="1G")
    mail_site.site.measured("20", start, start + timedelta(hours=0.25), busy_cpus=2.0,
                            memory_bytes=0.9 * GiB)
    mail_site.site.job("21", start=start, hours=0.25)
    mail_site.site.measured("21", start, start + timedelta(hours=0.25), busy_cpus=0.5,
                            memory_bytes=GiB)
    warnings_only = mail_settings(jobs="warnings")
    now = django_timezone.now()
    poll(accounting(get_config()), warnings_only, now)
    outcomes = {r.jobid: r.outcome for r in deliver_due(sender(warnings_only), now)}
    assert outcomes == {"20": MailOutcome.SKIPPED, "21": MailOutcome.SENT}
    assert UsageMail.objects.get(jobid="20").state == UsageMail.SKIPPED


def test_a_dry_run_prints_the_email_and_changes_nothing(mail_site: MailSite) -> None:
    ended_job(mail_site)
    row = queue()
    [result] = deliver_due(sender(dry_run=True), django_timezone.now())
    assert result.outcome is MailOutcome.DRY_RUN
    assert "Subject: Job 4242 (analysis) COMPLETED" in result.detail
    assert "[attachment: job-4242-usage.pdf, application/pdf," in result.detail
    assert "What to change next time" in result.detail
    after = UsageMail.objects.get(id=row.id)
    assert (after.state, after.attempts, after.claim) == (UsageMail.PENDING, 0, "")
    assert mail_site.smtp.messages == []


def test_a_row_another_run_has_claimed_is_not_sent_again(mail_site: MailSite) -> None:
    ended_job(mail_site)
    row = queue()
    now = django_timezone.now()
    mine = mail_outbox.claim(row.id, now)
    assert mine is not None
    assert mail_outbox.claim(row.id, now) is None  # the second run's UPDATE matches nothing
    assert [r.outcome for r in deliver_due(sender(), now)] == []
    assert deliver(mine, sender(), now).outcome is MailOutcome.SENT
    # A claim whose run died is taken over after the lease; a sent row never is.
    assert mail_outbox.claim(row.id, now + mail_outbox.CLAIM_LEASE * 2) is None
    assert len(mail_site.smtp.wait_for(1)) == 1
