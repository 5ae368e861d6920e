"""A job's name is whatever its user typed, and Slurm 22.05 keeps every character of it:
`sbatch -J $'a\\nb'` gives a name with a line break that `sacct --parsable2` prints as it
is, and a form feed, a vertical tab or a file separator as well (checked on real Slurm
below). One such name must neither break every listing it appears in (the user's page, the
email poller's list of every user's jobs) nor let its owner write a line that accounting
would seem to have printed: a job filed under another user in the poller's list must not
send that user's report to the name's author."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone as django_timezone

from clusterwatch.monitor.usage.accounting.sacct import SacctAccounting
from clusterwatch.monitor.usage.accounting.sacct_parse import find_job, parse_sacct
from clusterwatch.monitor.usage.accounting_source import accounting
from clusterwatch.monitor.usage.mail import outbox as mail_outbox
from clusterwatch.monitor.usage.mail.delivery import MailOutcome, deliver_due
from clusterwatch.monitor.usage.mail.poll import poll
from clusterwatch.monitor.usage.models import UsageMail
from tests.monitor.usage.mail_support import DOMAIN, MailSite, sender
from tests.monitor.usage.page_support import client_of
from tests.monitor.usage.real_slurm import USER, real_jobs
from tests.monitor.usage.sacct_support import SEP, line, step

# What Python's str.splitlines() also takes for a line's end: none of them ends sacct's.
BREAKS = ["\n", "\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028",
          "\u2029"]


@pytest.mark.parametrize("brk", BREAKS,
                         ids=["+".join(f"U+{ord(c):04X}" for c in b) for b in BREAKS])
def test_it_reads_a_name_holding_a_line_break_whole_and_the_jobs_after_it(brk: str) -> None:
    name = f"first{brk}second|third"
    output = "\n".join([line(JobID="10", JobIDRaw="10", JobName=name),
                        step("10.batch", "2048K"),
                        line(JobID="11", JobIDRaw="11", JobName="plain")]) + "\n"
    jobs = parse_sacct(output, SEP)
    assert [(job.jobid, job.name) for job in jobs] == [("10", name), ("11", "plain")]
    assert jobs[0].max_rss_bytes == 2048 * 1024


def test_a_line_written_in_a_name_does_not_replace_the_job_it_names() -> None:
    forged = line(JobID="10", JobIDRaw="10", User="mallory", Account="other")
    output = line(JobID="10", JobIDRaw="10", JobName="x\n" + forged) + "\n"
    job = find_job(output, "10", SEP)
    assert job is not None and (job.user, job.account) == ("alice", "physics")


@pytest.mark.django_db
def test_a_name_with_a_line_break_breaks_neither_the_users_page_nor_the_poller(
        mail_site: MailSite) -> None:
    site = mail_site.site
    now = django_timezone.now().replace(microsecond=0)
    site.job("21", name="form\x0cfeed", start=now - timedelta(hours=2))
    site.job("22", name="two\nlines", start=now - timedelta(hours=2))
    answer = client_of("alice").get("/api/v1/users/alice")
    assert answer.status_code == 200, answer.content
    assert [job["name"] for job in answer.json()["jobs"]] == ["two\nlines", "form\x0cfeed"]
    found = poll(accounting(sender().config), sender().mail, now)
    assert (found.ended, found.queued) == (2, 2)


@pytest.mark.django_db
def test_a_job_filed_under_its_names_author_is_mailed_to_its_owner_only(
        mail_site: MailSite) -> None:
    site = mail_site.site
    now = django_timezone.now().replace(microsecond=0)
    start = now - timedelta(hours=2)
    site.job("601", user="alice", start=start)
    site.measured("601", start, start + timedelta(hours=1), busy_cpus=1.0,
                  memory_bytes=200 * 1024**2)
    alices = line(JobID="601", JobIDRaw="601", User="alice", Start=str(int(start.timestamp())),
                  End=str(int((start + timedelta(hours=1)).timestamp())))
    # Mallory's job, later in sacct's list, names itself with alice's line under her name.
    site.job("602", user="mallory", start=start,
             name="x\n" + alices.replace(SEP, "|").replace("|alice|", "|mallory|"))
    poll(accounting(sender().config), sender().mail, now)
    deliver_due(sender(), now)
    received = mail_site.smtp.wait_for(2, timeout=2)
    to = {message["Subject"].split()[1]: message["To"] for message in received}
    assert to == {"601": f"alice@{DOMAIN}", "602": f"mallory@{DOMAIN}"}


@pytest.mark.django_db
def test_an_email_queued_for_someone_else_than_the_jobs_owner_goes_to_the_owner(
        mail_site: MailSite) -> None:
    # A row queued under another user (a name forged a line for a job id not used yet, and
    # alice's job got that id later): the report is hers, and so is the email.
    site = mail_site.site
    start, end = site.job("700", user="alice")
    site.measured("700", start, end, busy_cpus=1.0, memory_bytes=200 * 1024**2)
    mail_outbox.enqueue("700", user="mallory", recipient=f"mallory@{DOMAIN}", trigger="poller",
                        now=django_timezone.now())
    results = deliver_due(sender(), django_timezone.now())
    assert [(r.jobid, r.outcome) for r in results] == [("700", MailOutcome.SENT)]
    [message] = mail_site.smtp.wait_for(1)
    assert message["To"] == f"alice@{DOMAIN}"
    row = UsageMail.objects.get(jobid="700")
    assert (row.user, row.recipient, row.state) == ("alice", f"alice@{DOMAIN}", UsageMail.SENT)


@pytest.mark.integration
def test_on_real_slurm_names_with_line_breaks_come_back_whole(
        pytestconfig: pytest.Config) -> None:
    jobs = real_jobs(pytestconfig)
    cluster = jobs.cluster
    names = {str(cluster.submit("exit 0", mem="50M", job_name=name)): name
             for name in ("two\nlines", "form\x0cfeed", "vertical\x0btab")}
    for jobid in names:
        cluster.wait_done(int(jobid))
        cluster.accounting.wait_accounted(jobid)
    sacct = SacctAccounting(cluster.accounting.sacct_program)
    listed = {job.jobid: job.name for job in sacct.jobs_of_user(USER, jobs.since)}
    assert {jobid: listed.get(jobid) for jobid in names} == names
    ended = {job.jobid: job.name for job in sacct.jobs_ended_since(jobs.since)}
    assert {jobid: ended.get(jobid) for jobid in names} == names
    assert {jobid: sacct.job(jobid).name for jobid in names} == names
