"""`clusterwatch monitor usage_mail` and `usage_mailprog` through the installed console script,
against a real SMTP server (aiosmtpd) and a database file shared by the runs: one email per
job whoever runs and however often, exit statuses, and no password in any output."""

from __future__ import annotations

import getpass
import os
import subprocess
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from clusterwatch.loopback.services import MissingComponent
from clusterwatch.loopback.smtp import SmtpServer
from tests.components import unavailable
from tests.monitor.usage.cli_support import CONSOLE, ENDED, Cli, finished
from tests.monitor.usage.mail_support import DOMAIN, parts
from tests.monitor.usage.prometheus_range import RangePrometheus
from tests.monitor.usage.site import UsageSite
from tests.support.monitor_console import copy_migrated

WRAPPER = Path(__file__).resolve().parents[3] / "deploy" / "slurm" / "clusterwatch-mailprog"
SECRET = "Sm7p-s3cret-9f1c"


@pytest.fixture
def cli(bare_cli: Cli, migrated_sqlite: Path) -> Cli:
    """With its database made: a copy of the migrated one."""
    copy_migrated(migrated_sqlite, Path(bare_cli.env["CLUSTERWATCH_DATA_DIR"]))
    return bare_cli


@pytest.fixture
def bare_cli(tmp_path: Path) -> Iterator[Cli]:
    """The console script's environment: a fake sacct, a loopback Prometheus, an SMTP server
    with a login whose password is in a mode-600 file; no database yet."""
    with RangePrometheus() as prometheus:
        server = SmtpServer(login=("monitor", SECRET))
        try:
            server.__enter__()
        except MissingComponent as missing:
            unavailable(missing)
        try:
            tool = Cli(tmp_path, UsageSite(tmp_path, prometheus), server)
            secret = tmp_path / "email-password"
            secret.write_text(SECRET + "\n")
            secret.chmod(0o600)
            tool.env.update({"CLUSTERWATCH_EMAIL_USER": "monitor",
                             "CLUSTERWATCH_EMAIL_PASSWORD_FILE": str(secret)})
            yield tool
        finally:
            server.down()


def test_the_poller_sends_each_ended_job_once_however_often_it_runs(cli: Cli) -> None:
    cli.ended_job("10")
    first = cli.run("monitor", "usage_mail")
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == f"job 10: sent: to alice@{DOMAIN}"
    assert "1 jobs ended since" in first.stderr and "1 queued" in first.stderr
    assert "usage_mail: 1 sent" in first.stderr.splitlines()
    again = cli.run("monitor", "usage_mail")
    assert again.returncode == 0 and again.stdout == ""
    [message] = cli.smtp.wait_for(2, timeout=1)
    found = parts(message)
    assert found["attachments"]["job-10-usage.pdf"].startswith(b"%PDF")
    assert found["html"] is not None and "Your job 10 (analysis)" in found["text"]


def test_mailprog_and_the_poller_at_once_send_one_email(cli: Cli) -> None:
    for jobid in ("20", "21"):
        cli.ended_job(jobid)
    for jobid in ("20", "21"):
        runs = [cli.mailprog(jobid), cli.start("monitor", "usage_mail")]
        results = [finished(run) for run in runs]
        assert [r.returncode for r in results] == [0, 0], [r.stderr for r in results]
    received = cli.smtp.wait_for(3, timeout=2)
    assert sorted(m["Subject"].split()[1] for m in received) == ["20", "21"]


def test_mailprog_queues_only_the_end_of_a_job(cli: Cli) -> None:
    cli.ended_job("30")
    began = finished(cli.mailprog("30", "Began"))
    assert began.returncode == 0 and "is not the end of a job" in began.stderr
    summary = finished(cli.start("monitor", "usage_mailprog", "-s",
                                 "Slurm Array Summary Job_id=30_* (30) Name=a Ended", "alice",
                                 SLURM_JOB_ID="30", SLURM_JOB_USER="alice",
                                 SLURM_JOB_MAIL_TYPE="Ended"))
    assert summary.returncode == 0 and "nothing queued" in summary.stderr
    assert cli.run("monitor", "usage_mail", "--dry-run").stdout.count("would send") == 1
    assert cli.smtp.messages == []


def test_mailprog_exits_0_when_the_send_fails_and_once_sends_it_later(cli: Cli) -> None:
    cli.ended_job("40")
    cli.smtp.down()
    queued = finished(cli.mailprog("40"))
    assert queued.returncode == 0, queued.stderr
    assert "job 40: retry: SMTP server unreachable" in queued.stderr
    cli.smtp.up()
    assert cli.run("monitor", "usage_mail").stdout == ""  # its retry is a minute away
    once = cli.run("monitor", "usage_mail", "--once", "40")
    assert once.returncode == 0 and once.stdout.startswith("job 40: sent"), once.stderr
    again = cli.run("monitor", "usage_mail", "--once", "40")
    assert again.returncode == 0 and "job 40: sent: already" in again.stdout
    assert len(cli.smtp.wait_for(2, timeout=1)) == 1


def test_mailprog_leaves_a_job_whose_figures_are_not_final_to_the_poller(cli: Cli) -> None:
    cli.ended_job("50", minutes_ago=0.2)  # ended 12 s ago: final 60 s after its end
    queued = finished(cli.mailprog("50"))
    assert queued.returncode == 0 and "job 50: waiting" in queued.stderr
    assert cli.smtp.messages == []


def test_a_dry_run_prints_the_email_sends_nothing_and_changes_nothing(cli: Cli) -> None:
    cli.ended_job("60")
    dry = cli.run("monitor", "usage_mail", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "=== job 60: would send ===" in dry.stdout
    assert f"To: alice@{DOMAIN}" in dry.stdout and "Subject: Job 60 (analysis)" in dry.stdout
    assert "What it asked for and what it used" in dry.stdout
    assert "[attachment: job-60-usage.pdf, application/pdf," in dry.stdout
    assert cli.smtp.messages == []
    sent = cli.run("monitor", "usage_mail")
    assert sent.stdout.strip() == f"job 60: sent: to alice@{DOMAIN}"  # the dry run queued none


def test_the_smtp_password_never_appears_in_any_output(cli: Cli, tmp_path: Path) -> None:
    cli.ended_job("70")
    cli.ended_job("71")
    good = cli.run("-vv", "monitor", "usage_mail", "--once", "70")
    assert good.returncode == 0 and "job 70: sent" in good.stdout, good.stderr
    wrong = tmp_path / "wrong-password"
    wrong.write_text("not-" + SECRET)
    wrong.chmod(0o600)
    refused = cli.run("-vv", "monitor", "usage_mail", "--once", "71",
                      CLUSTERWATCH_EMAIL_PASSWORD_FILE=str(wrong))
    assert refused.returncode == 0 and "job 71: retry: SMTP 535" in refused.stdout
    for done in (good, refused):
        assert SECRET not in done.stdout + done.stderr
    assert cli.smtp.failed_logins >= 1 and len(cli.smtp.messages) == 1
    assert SECRET not in " ".join(str(arg) for arg in good.args)


@pytest.mark.parametrize(("changes", "says"), [
    ({"CLUSTERWATCH_EMAIL_FROM": ""}, "CLUSTERWATCH_EMAIL_FROM is not set"),
    ({"CLUSTERWATCH_EMAIL_BASE_URL": ""}, "CLUSTERWATCH_EMAIL_BASE_URL is not set"),
    ({"CLUSTERWATCH_EMAIL_PORT": "99999"}, "CLUSTERWATCH_EMAIL_PORT must be a port number"),
    ({"CLUSTERWATCH_EMAIL_PASSWORD_FILE": "/nonexistent"},
     "CLUSTERWATCH_EMAIL_PASSWORD_FILE: no such file"),
    ({"CLUSTERWATCH_EMAIL_PASSWORD": SECRET}, "CLUSTERWATCH_EMAIL_PASSWORD is not read"),
    ({"CLUSTERWATCH_PROMETHEUS_URL": ""}, "CLUSTERWATCH_PROMETHEUS_URL is not set"),
])
def test_a_configuration_error_exits_78_with_one_line(bare_cli: Cli, changes: dict[str, str],
                                                      says: str) -> None:
    for done in (bare_cli.run("monitor", "usage_mail", **changes),
                 finished(bare_cli.mailprog("80", **changes))):
        assert done.returncode == 78, (done.args, done.stderr)
        assert says in done.stderr and len(done.stderr.strip().splitlines()) == 1
        assert "Traceback" not in done.stderr and SECRET not in done.stderr


def test_a_password_file_readable_by_others_or_a_missing_sacct_exits_78(cli: Cli) -> None:
    os.chmod(cli.env["CLUSTERWATCH_EMAIL_PASSWORD_FILE"], 0o644)
    done = cli.run("monitor", "usage_mail")
    assert done.returncode == 78 and "readable by others" in done.stderr
    assert SECRET not in done.stderr
    os.chmod(cli.env["CLUSTERWATCH_EMAIL_PASSWORD_FILE"], 0o600)
    done = cli.run("monitor", "usage_mail", CLUSTERWATCH_SACCT="/nonexistent/sacct")
    assert done.returncode == 78 and "sacct program not found" in done.stderr


def test_failures_and_bad_arguments_exit_1_and_2(cli: Cli) -> None:
    assert cli.run("monitor", "usage_mail", "--once", "1;rm").returncode == 2
    unknown = cli.run("monitor", "usage_mail", "--once", "77")
    assert unknown.returncode == 1 and "job 77 is unknown to accounting" in unknown.stderr
    cli.site.fail("sacct: error: slurmdbd is down")
    down = cli.run("monitor", "usage_mail")
    assert down.returncode == 1 and "accounting failed" in down.stderr
    assert "slurmdbd is down" in down.stderr and "Traceback" not in down.stderr
    no_job = finished(cli.mailprog("", SLURM_JOB_USER=""))
    assert no_job.returncode == 1 and "SLURM_JOB_ID" in no_job.stderr


def test_the_slurm_wrapper_queues_the_end_of_a_job_and_hands_other_mails_on(
        cli: Cli, tmp_path: Path) -> None:
    cli.ended_job("90")
    env_file = tmp_path / "monitor.env"
    env_file.write_text("".join(f"{key}={value}\n" for key, value in cli.env.items()
                                if key.startswith("CLUSTERWATCH_")))
    handed = tmp_path / "handed-on"
    fallback = tmp_path / "mail"
    fallback.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$@\" > {handed}\n")
    fallback.chmod(0o755)
    base = {key: value for key, value in cli.env.items() if not key.startswith("CLUSTERWATCH_")}
    base.update({"CLUSTERWATCH": CONSOLE, "CLUSTERWATCH_USER": getpass.getuser(),
                 "CLUSTERWATCH_ENV_FILE": str(env_file), "FALLBACK_MAILPROG": str(fallback),
                 "SLURM_JOB_ID": "90", "SLURM_JOB_USER": "alice"})
    subject = "Slurm Job_id=90 Name=analysis Began, Queued time 00:00:01"
    began = subprocess.run([str(WRAPPER), "-s", subject, "alice"], capture_output=True,
                           text=True, timeout=180, check=False,
                           env={**base, "SLURM_JOB_MAIL_TYPE": "Began"})
    assert began.returncode == 0 and handed.read_text() == f"-s\n{subject}\nalice\n"
    ended = subprocess.run([str(WRAPPER), "-s", ENDED.format(jobid="90"), "alice"],
                           capture_output=True, text=True, timeout=180, check=False,
                           env={**base, "SLURM_JOB_MAIL_TYPE": "Ended"})
    assert ended.returncode == 0 and "job 90: sent" in ended.stderr, ended.stderr
    assert [m["Subject"].split()[1] for m in cli.smtp.wait_for(1)] == ["90"]


def test_one_unreadable_accounting_line_is_skipped_named_and_counted(cli: Cli) -> None:
    # Issue 19, item 8: one `Start` that is no time stopped every email, run after run.
    for jobid in ("30", "31", "32"):
        cli.ended_job(jobid)
    cli.site.change("31", Start="notatime")
    first = cli.run("monitor", "usage_mail")
    assert first.returncode == 0, first.stderr
    assert sorted(first.stdout.splitlines()) == [f"job 30: sent: to alice@{DOMAIN}",
                                                 f"job 32: sent: to alice@{DOMAIN}"]
    named = [line for line in first.stderr.splitlines() if "usage_mail: skipped" in line]
    assert named == ["usage_mail: skipped job 31 accounting lists: sacct line 3: field Start: "
                     "not a time: 'notatime'"]
    assert "2 jobs ended since" in first.stderr and "2 queued" in first.stderr
    assert "1 unreadable in accounting (skipped)" in first.stderr
    again = cli.run("monitor", "usage_mail")
    assert again.returncode == 0 and again.stdout == "", again.stderr
    assert len(cli.smtp.wait_for(3, timeout=1)) == 2


def test_a_heterogeneous_job_gets_one_email_whoever_queues_it(cli: Cli) -> None:
    # Issue 19, item 12: its components 87100+0 and 87100+1 got one each, beside MailProg's.
    start = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(minutes=30)
    cli.site.job("87100+0", raw_id="87100", start=start, hours=0.25, cpus=4)
    cli.site.job("87100+1", raw_id="87101", start=start, hours=0.25, cpus=1)
    mailprog = finished(cli.mailprog("87100"))
    assert mailprog.returncode == 0, mailprog.stderr
    poller = cli.run("monitor", "usage_mail")
    assert poller.returncode == 0, poller.stderr
    assert ", 0 queued" in poller.stderr  # MailProg's 87100 is the job of both components
    [message] = cli.smtp.wait_for(2, timeout=1)
    assert message["Subject"].startswith("Job 87100 (analysis)")
    text = parts(message)["text"]
    assert "Your job 87100 (analysis)" in text and "87100+" not in text
    assert "5 CPUs" in text  # its components' 4 and 1
    # Without MailProg the poller alone queues the job once, by the same id.
    later = start + timedelta(minutes=12)  # ended since the last run, less its overlap
    cli.site.job("87200+0", raw_id="87200", start=later, hours=0.25)
    cli.site.job("87200+1", raw_id="87201", start=later, hours=0.25)
    alone = cli.run("monitor", "usage_mail")
    assert alone.returncode == 0 and ", 1 queued" in alone.stderr, alone.stderr
    assert alone.stdout == f"job 87200: sent: to alice@{DOMAIN}\n"
