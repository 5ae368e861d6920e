"""usage_watch in process over a stand-in sacct (running jobs), a loopback Prometheus answering
the three per-rule queries, and a real SMTP server (aiosmtpd): one email per (job, rule) to the
job's owner, none on the next run, none for a job that is fine; what a crash leaves is sent
by the next run, once; the hook; the staff page of the jobs breaking a rule now."""

from __future__ import annotations

import io
import socket
import stat
import tracemalloc
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client

from clusterwatch.errors import RunError
from clusterwatch.loopback.running_prometheus import RunningPrometheus
from clusterwatch.monitor.usage.config import get_config
from clusterwatch.monitor.usage.mail import watch_run
from clusterwatch.monitor.usage.mail.connection import SmtpLink
from clusterwatch.monitor.usage.mail.watch_hook import Hook, run_hook
from clusterwatch.monitor.usage.models import UsageAlert, UsageMailCursor
from tests.monitor.usage.mail_support import DOMAIN, MailSite

pytestmark = pytest.mark.django_db

GiB = 1024**3
ALL_RULES = ["gpu_idle", "cpu_idle", "memory_near_limit"]


@dataclass
class Watch:
    mail: MailSite
    prometheus: RunningPrometheus

    def run(self, *arguments: str) -> tuple[str, str]:
        out, err = io.StringIO(), io.StringIO()
        call_command("usage_watch", *arguments, stdout=out, stderr=err)
        return out.getvalue(), err.getvalue()

    def mails(self, count: int, timeout: float = 10.0) -> list[Any]:
        return self.mail.smtp.wait_for(count, timeout)


def running(mail: MailSite, jobid: str, user: str, *, cpus: int = 8, gpus: int = 0,
            hours: float = 2.0) -> None:
    start = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(hours=hours)
    mail.site.job(jobid, user=user, state="RUNNING", running=True, start=start, hours=hours,
                  cpus=cpus, req_mem="8G", name=f"{user}-run")
    if gpus:
        mail.site.change(jobid, AllocTRES=f"billing={cpus},cpu={cpus},mem=8G,node=1,"
                                          f"gres/gpu={gpus}")


@pytest.fixture
def watch(mail_site: MailSite, monkeypatch: pytest.MonkeyPatch) -> Iterator[Watch]:
    with RunningPrometheus() as prometheus:
        monkeypatch.setenv("CLUSTERWATCH_PROMETHEUS_URL", prometheus.url)
        get_config.cache_clear()
        # alice: 2 GPUs idle, 8 CPUs of which 0.5 busy, 7.5 of 8 GiB: breaks every rule.
        running(mail_site, "5001", "alice", gpus=2)
        prometheus.job("5001", gpus={"GPU-a": 0.0, "GPU-b": 0.0}, cores_busy=0.5,
                       memory={"node01": (7.5 * GiB, 8.0 * GiB)})
        # bob uses what he holds: no email.
        running(mail_site, "5002", "bob", gpus=1)
        prometheus.job("5002", gpus={"GPU-c": 0.95}, cores_busy=7.8,
                       memory={"node01": (3.0 * GiB, 8.0 * GiB)})
        # carol keeps one CPU of eight busy.
        running(mail_site, "5003", "carol")
        prometheus.job("5003", cores_busy=1.0, memory={"node01": (GiB, 8.0 * GiB)})
        # dave's job ended: the series linger in the window, but nothing runs to alert on.
        mail_site.site.job("5004", user="dave", cpus=8)
        prometheus.job("5004", cores_busy=0.0)
        yield Watch(mail_site, prometheus)
    get_config.cache_clear()


def sent_pairs(messages: list[Any]) -> list[tuple[str, str, str]]:
    return sorted((m["X-Clusterwatch-Job"], m["X-Clusterwatch-Rule"], m["To"])
                  for m in messages)


EXPECTED = [("5001", rule, f"alice@{DOMAIN}") for rule in sorted(ALL_RULES)] + [
    ("5003", "cpu_idle", f"carol@{DOMAIN}")]


def test_it_emails_each_owner_once_per_job_and_rule(watch: Watch) -> None:
    out, err = watch.run()
    assert err == ""
    assert sent_pairs(watch.mails(4)) == EXPECTED
    lines = out.splitlines()
    assert lines[0].startswith("job 5001 (alice, 8 CPUs, 2 GPUs): gpu_idle (new), "
                               "cpu_idle (new), memory_near_limit (new): None of the job's")
    assert lines[1].startswith("job 5003 (carol, 8 CPUs): cpu_idle (new): ")
    assert lines[-1] == ("usage_watch: 3 running jobs, 3 with figures, 2 breaking a rule "
                         "(4 findings, 4 new); 4 emails sent")
    assert len(watch.prometheus.queries) == 3
    message = next(m for m in watch.mails(4) if m["X-Clusterwatch-Rule"] == "memory_near_limit")
    text = message.get_content()
    assert "Your job will be killed when it reaches 8 GiB" in text
    assert "memory limit: 8.0 GiB" in text and "https://monitor.test/usage/jobs/5001/" in text
    assert message["Subject"] == ("Job 5001 (alice-run) is still running: it is close to its "
                                  "memory limit")
    assert message["Message-ID"].startswith("<usage-watch-5001.memory_near_limit.")

    again, _err = watch.run()
    assert len(watch.mails(5, timeout=0.5)) == 4  # none a second time
    assert "gpu_idle, cpu_idle, memory_near_limit: " in again.splitlines()[0]  # not new
    assert again.splitlines()[-1].endswith("(4 findings, 0 new); 0 emails sent")
    assert set(UsageAlert.objects.values_list("state", flat=True)) == {UsageAlert.SENT}


def test_a_crash_between_writing_and_sending_loses_nothing(
        watch: Watch, monkeypatch: pytest.MonkeyPatch) -> None:
    def killed(*_args: object) -> None:
        raise KeyboardInterrupt  # the run dies right after the rows were written

    with monkeypatch.context() as patched:
        patched.setattr(watch_run, "_deliver_due", killed)
        with pytest.raises(KeyboardInterrupt):
            watch.run()
    assert watch.mails(1, timeout=0.3) == []
    assert UsageAlert.objects.filter(state=UsageAlert.PENDING).count() == 4
    _out, _err = watch.run()
    assert sent_pairs(watch.mails(4)) == EXPECTED


def test_a_crash_mid_send_gives_the_rest_to_the_next_run_each_once(
        watch: Watch, monkeypatch: pytest.MonkeyPatch) -> None:
    send = SmtpLink.send
    calls = []

    def dies_at_the_second(link: SmtpLink, message: Any) -> None:
        calls.append(message)
        if len(calls) == 2:
            raise SystemExit(143)  # SIGTERM's status: the timer stopped it mid-send
        send(link, message)

    with monkeypatch.context() as patched:
        patched.setattr(SmtpLink, "send", dies_at_the_second)
        with pytest.raises(SystemExit):
            watch.run()
    assert len(watch.mails(1)) == 1
    assert UsageAlert.objects.filter(claim="").count() == 4  # the claim given back
    watch.run()
    assert sent_pairs(watch.mails(4)) == EXPECTED
    assert len(watch.mails(5, timeout=0.3)) == 4


def test_a_row_that_makes_no_email_is_given_up_and_the_others_are_sent(
        watch: Watch) -> None:
    now = datetime.now(timezone.utc)
    UsageAlert.objects.create(  # damaged by hand: an address Django cannot parse
        jobid="4999", rule="cpu_idle", user="erin", recipient="erin;x@example.org",
        message="m", advice="a", next_attempt_at=now - timedelta(hours=1), created_at=now)
    with pytest.raises(RunError, match=r"^1 email\(s\) and 0 hook run\(s\) failed"):
        watch.run()
    assert sent_pairs(watch.mails(4)) == EXPECTED
    damaged = UsageAlert.objects.get(jobid="4999")
    assert damaged.state == UsageAlert.FAILED
    assert damaged.last_error.startswith("the email cannot be made: Invalid address")
    watch.run()  # given up: not tried again
    assert len(watch.mails(5, timeout=0.3)) == 4


def test_rows_no_run_found_for_90_days_are_deleted_and_no_others(watch: Watch) -> None:
    watch.run()
    old = datetime.now(timezone.utc) - timedelta(days=91)
    UsageAlert.objects.update(created_at=old, last_seen_at=old)
    watch.prometheus.job("5003", cores_busy=7.0)  # no longer broken: its row is history
    watch.run()  # alice's job still breaks its rules: its rows stay, and no second email
    assert sorted(UsageAlert.objects.values_list("jobid", flat=True)) == ["5001"] * 3
    assert len(watch.mails(5, timeout=0.3)) == 4


def test_a_refused_send_is_one_line_exit_1_and_retried_later(watch: Watch) -> None:
    watch.mail.smtp.refuse("451 4.3.0 try again later")
    with pytest.raises(RunError, match=r"^4 email\(s\) and 0 hook run\(s\) failed"):
        watch.run()
    rows = UsageAlert.objects.all()
    assert {(row.state, row.attempts) for row in rows} == {(UsageAlert.PENDING, 1)}
    assert all("451" in row.last_error for row in rows)


def test_an_smtp_server_that_never_answers_costs_one_timeout_a_run(
        watch: Watch, settings: Any) -> None:
    with socket.socket() as silent:  # connections queue in its backlog: no greeting comes
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        settings.EMAIL_PORT, settings.EMAIL_TIMEOUT = silent.getsockname()[1], 0.3
        with pytest.raises(RunError, match=r"^1 email\(s\) and 0 hook run\(s\) failed"):
            watch.run()
    rows = UsageAlert.objects.order_by("-attempts")
    assert [row.attempts for row in rows] == [1, 0, 0, 0]  # the rest left due, untried
    assert "timed out" in rows[0].last_error
    settings.EMAIL_PORT = watch.mail.smtp.port
    watch.run()  # the next run sends those left, the retried one once it is due
    assert len(watch.mails(3)) == 3


def test_a_source_that_fails_writes_nothing_and_says_so(watch: Watch) -> None:
    watch.prometheus.fail_with(503, b'{"status":"error","error":"overloaded"}')
    with pytest.raises(RunError, match=r"^Prometheus is unavailable \(unavailable\): "):
        watch.run()
    assert not UsageAlert.objects.exists()
    assert not UsageMailCursor.objects.filter(name=watch_run.CURSOR).exists()


def test_a_dry_run_prints_and_writes_or_sends_nothing(watch: Watch) -> None:
    out, _err = watch.run("--dry-run")
    assert out.splitlines()[-1].endswith("(4 findings); dry run: nothing written or sent")
    assert out.startswith("job 5001 (alice")
    assert not UsageAlert.objects.exists() and watch.mails(1, timeout=0.3) == []


def test_the_hook_runs_once_per_job_and_rule_without_a_shell(
        watch: Watch, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    called = tmp_path / "called"
    hook = tmp_path / "hook"
    hook.write_text(f"#!/bin/sh\necho \"$1 $2 $#\" >> {called}\n")
    hook.chmod(stat.S_IRWXU)
    monkeypatch.setenv("CLUSTERWATCH_USAGE_WATCH_HOOK", str(hook))
    watch.run()
    watch.run()
    assert sorted(called.read_text().splitlines()) == sorted(
        [f"5001 {rule} 2" for rule in ALL_RULES] + ["5003 cpu_idle 2"])


def test_a_hook_that_fails_or_overruns_is_one_line_each(
        watch: Watch, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hook = tmp_path / "hook"
    hook.write_text('#!/bin/sh\n[ "$2" = cpu_idle ] && exec sleep 30\n'
                    'echo "no ticket system" >&2\nexit 3\n')
    hook.chmod(stat.S_IRWXU)
    monkeypatch.setenv("CLUSTERWATCH_USAGE_WATCH_HOOK", str(hook))
    monkeypatch.setenv("CLUSTERWATCH_USAGE_WATCH_HOOK_TIMEOUT_S", "0.3")
    with pytest.raises(RunError, match=r"^0 email\(s\) and 4 hook run\(s\) failed"):
        out = io.StringIO()
        err = io.StringIO()
        try:
            call_command("usage_watch", stdout=out, stderr=err)
        finally:
            lines = err.getvalue().splitlines()
    assert ("usage_watch: job 5001 gpu_idle: the hook failed with exit status 3: "
            "no ticket system") in lines
    assert ("usage_watch: job 5003 cpu_idle: the hook gave no answer within 0.3 s and was "
            "killed") in lines
    assert len(watch.mails(4)) == 4  # the emails go out all the same


def test_a_hook_that_writes_without_end_holds_little_memory_and_is_killed_in_time(
        tmp_path: Path) -> None:
    endless, loud = tmp_path / "endless", tmp_path / "loud"
    endless.write_text("#!/bin/sh\nexec yes 'the hook says this again and again' >&2\n")
    loud.write_text("#!/bin/sh\nhead -c 1000000 /dev/zero | tr '\\0' x >&2\n"
                    "echo >&2; echo 'the ticket system refused' >&2\nexit 4\n")
    for hook in (endless, loud):
        hook.chmod(stat.S_IRWXU)
    tracemalloc.start()
    try:  # it used to keep all it wrote: gigabytes within seconds
        why = run_hook(Hook(str(endless), 0.5), "5001", "gpu_idle", {})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert why == "the hook gave no answer within 0.5 s and was killed"
    assert peak < 4 * 2**20
    assert run_hook(Hook(str(loud), 5.0), "5001", "gpu_idle", {}) == (
        "the hook failed with exit status 4: the ticket system refused")


def test_the_staff_page_lists_the_jobs_breaking_a_rule_now(watch: Watch) -> None:
    staff, researcher = Client(), Client()
    staff.force_login(User.objects.create_user("root", is_staff=True))
    researcher.force_login(User.objects.create_user("alice"))
    before = staff.get("/usage/staff/running/")
    assert b"No run of <code>usage_watch</code> has completed yet" in before.content
    watch.run()
    page = staff.get("/usage/staff/running/")
    assert page.status_code == 200
    body = page.content.decode()
    assert "2 running jobs broke 4 rules" in body
    assert "together they hold 16 CPUs, 2 GPUs and 16.0 GiB of memory" in body
    assert ">5001<" in body and ">5003<" in body and ">5002<" not in body
    assert "Memory near its limit" in body and "memory held / limit: 93.8 %" in body
    # carol's job gets busy: the next run no longer lists it.
    watch.prometheus.job("5003", cores_busy=7.0, memory={"node01": (GiB, 8.0 * GiB)})
    watch.run()
    body = staff.get("/usage/staff/running/").content.decode()
    assert ">5003<" not in body and "1 running job broke 3 rules" in body
    assert researcher.get("/usage/staff/running/").status_code == 404
    assert b'href="/usage/staff/running/"' in staff.get("/").content  # the index links it
    assert b"/usage/staff/running/" not in researcher.get("/").content


def test_the_timer_runs_usage_watch_every_ten_minutes() -> None:
    root = Path(__file__).resolve().parents[3] / "deploy" / "systemd"
    service = (root / "clusterwatch-usage-watch.service").read_text().splitlines()
    timer = (root / "clusterwatch-usage-watch.timer").read_text().splitlines()
    assert "ExecStart=/opt/clusterwatch/bin/clusterwatch monitor usage_watch" in service
    assert "Type=oneshot" in service and "OnUnitActiveSec=10min" in timer
