"""`usage_monthly --mail` against a real SMTP server (aiosmtpd on loopback): each coordinator
gets each account's month once, with the figures `usage_monthly --json` prints; a rerun sends
nothing; an SMTP server that is down is retried by a later run and never sends twice; a row
another run holds is left to it, and one a crashed run held is sent once its claim expires;
a coordinator without an address; the exit statuses; the systemd units."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError

from clusterwatch.errors import ConfigError, RunError
from clusterwatch.loopback.smtp import SmtpServer
from clusterwatch.monitor.usage.coordinators import VARIABLE
from clusterwatch.monitor.usage.mail import monthly_outbox
from clusterwatch.monitor.usage.models import MonthlyMail
from tests.monitor.usage.accounts_support import kept
from tests.monitor.usage.cli_support import run
from tests.monitor.usage.mail_support import SMTP_BACKEND, mail_settings, parts
from tests.monitor.usage.site import UsageSite

pytestmark = pytest.mark.django_db
UTC = timezone.utc
ROOT = Path(__file__).resolve().parents[3]
MARCH = "2026-03"


@pytest.fixture
def monthly(smtp: SmtpServer, settings: Any, tmp_path: Path,
            monkeypatch: pytest.MonkeyPatch) -> Iterator[SmtpServer]:
    """atlas' and cms' jobs in March; dave (an address of his own) and erin (user@DOMAIN)
    coordinate atlas, erin cms; the email's settings pointed at the SMTP server."""
    settings.EMAIL_BACKEND = SMTP_BACKEND
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", smtp.port
    settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
    settings.EMAIL_HOST_USER, settings.EMAIL_TIMEOUT = "", 5.0
    settings.USAGE_MAIL = mail_settings()
    User.objects.create_user("dave", email="dave@lab.example", first_name="Dave")
    kept("1", user="alice", end=datetime(2026, 3, 10, tzinfo=UTC), elapsed_s=7200, cpus=4,
         cpu_efficiency=0.25)
    kept("2", user="bob", end=datetime(2026, 3, 20, tzinfo=UTC), elapsed_s=3600, cpus=8,
         cpu_efficiency=0.75)
    kept("3", account="cms", user="carol", end=datetime(2026, 3, 5, tzinfo=UTC),
         elapsed_s=600, cpu_efficiency=0.9)
    mapping = tmp_path / "coordinators.toml"
    mapping.write_text('atlas = ["dave", "erin"]\ncms = ["erin"]\nlhcb = ["dave"]\n')
    monkeypatch.setenv(VARIABLE, str(mapping))
    yield smtp


def send(*arguments: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("usage_monthly", "--mail", "--month", MARCH, *arguments, stdout=out,
                 stderr=err)
    return out.getvalue(), err.getvalue()


def test_each_coordinator_gets_each_accounts_month_once(monthly: SmtpServer) -> None:
    out, err = send()
    assert "2 accounts ran jobs in 2026-03, 3 emails queued, 3 tried" in err
    assert sorted(out.splitlines()) == [
        "account atlas 2026-03 to dave: sent: to dave@lab.example",
        "account atlas 2026-03 to erin: sent: to erin@example.org",
        "account cms 2026-03 to erin: sent: to erin@example.org"]
    messages = monthly.wait_for(3)
    [dave] = [m for m in messages if m["To"] == "dave@lab.example"]
    figures = StringIO()
    call_command("usage_monthly", "--month", MARCH, "--account", "atlas", "--json",
                 stdout=figures)
    [atlas] = json.loads(figures.getvalue())["accounts"]
    assert dave["Subject"] == ("Account atlas in 2026-03: 2 jobs, "
                               f"{atlas['figures']['cpu_hours']:,.1f} CPU-hours at 50.0 % CPU "
                               "efficiency")
    assert dave["Auto-Submitted"] == "auto-generated"
    assert re.fullmatch(r"<usage-monthly\.2026-03\.atlas\.dave\.\d+@monitor\.test>",
                        dave["Message-ID"])
    found = parts(dave)
    text, html = found["text"], found["html"]
    assert text.startswith("Hello Dave,")
    assert re.search(r"2026-03 +2 +16\.0 +0\.0 +50\.0 % +50\.0 % +8\.0", text), text
    for item in atlas["wasteful_jobs"]:
        assert (f"{item['name']}: {item['wasted_cpu_hours']:,.1f} of {item['cpu_hours']:,.1f} "
                f"CPU-hours wasted  https://monitor.test/usage/jobs/{item['name']}/") in text
    assert "https://monitor.test/usage/accounts/atlas/?month=2026-03" in text
    assert 'href="https://monitor.test/usage/accounts/atlas/?month=2026-03"' in html
    assert 'href="https://monitor.test/usage/jobs/1/"' in html and "<img" not in html
    assert "cms" not in text
    # Again the same day: nothing queued, nothing sent.
    out, err = send()
    assert out == "" and "0 emails queued, 0 tried" in err
    assert len(monthly.messages) == 3
    assert set(MonthlyMail.objects.values_list("state", flat=True)) == {MonthlyMail.SENT}


def test_an_smtp_server_that_is_down_is_retried_by_a_later_run_never_twice(
        monthly: SmtpServer) -> None:
    monthly.down()
    with pytest.raises(RunError, match="3 monthly emails not sent"):
        send()
    rows = MonthlyMail.objects.all()
    assert [(row.state, row.attempts) for row in rows] == [(MonthlyMail.PENDING, 1)] * 3
    assert all("SMTP server unreachable" in row.last_error for row in rows)
    monthly.up()
    out, _err = send()  # the retry is not due yet: nothing tried, nothing failed
    assert out == "" and monthly.messages == []
    MonthlyMail.objects.update(next_attempt_at=datetime(2026, 4, 1, tzinfo=UTC))
    out, _err = send()
    assert len(out.splitlines()) == 3 and len(monthly.wait_for(3)) == 3
    send()
    assert len(monthly.messages) == 3


def test_a_row_another_run_holds_is_left_to_it_and_a_crashed_runs_is_sent_later(
        monthly: SmtpServer) -> None:
    now = datetime.now(UTC)
    row, _created = monthly_outbox.enqueue(MARCH, "cms", user="erin",
                                           recipient="erin@example.org", now=now)
    held = monthly_outbox.claim(row.id, now)  # another run, still sending (or killed)
    assert held is not None
    out, err = send("--account", "cms")
    assert out == "" and "0 tried" in err and monthly.messages == []
    # That run was killed: once its claim expires, the next run sends the email, once.
    MonthlyMail.objects.filter(id=row.id).update(claimed_until=now - timedelta(seconds=1))
    out, _err = send("--account", "cms")
    assert out == "account cms 2026-03 to erin: sent: to erin@example.org\n"
    assert len(monthly.wait_for(1)) == 1
    monthly_outbox.sent(held, now)  # the killed run's late update: the claim is not its own
    assert MonthlyMail.objects.get(id=row.id).sent_at is not None
    assert MonthlyMail.objects.get(id=row.id).claim == ""


def test_a_row_that_makes_no_email_is_given_up_and_the_others_are_sent(
        monthly: SmtpServer) -> None:
    monthly_outbox.enqueue(MARCH, "cms", user="aaron", recipient="aaron;x@example.org",
                           now=datetime.now(UTC))  # damaged by hand; tried before erin's
    with pytest.raises(RunError, match=r"^1 monthly email not sent"):
        send("--account", "cms")
    assert [m["To"] for m in monthly.wait_for(1)] == ["erin@example.org"]
    damaged = MonthlyMail.objects.get(user="aaron")
    assert damaged.state == MonthlyMail.FAILED
    assert damaged.last_error.startswith("the email cannot be made: Invalid address")


def test_of_two_runs_that_listed_a_row_at_once_one_claims_it(monthly: SmtpServer) -> None:
    now = datetime.now(UTC)
    row, created = monthly_outbox.enqueue(MARCH, "cms", user="erin",
                                          recipient="erin@example.org", now=now)
    again, created_again = monthly_outbox.enqueue(MARCH, "cms", user="erin",
                                                  recipient="other@example.org", now=now)
    assert (created, created_again, again.id, again.recipient) == (
        True, False, row.id, "erin@example.org")
    assert monthly_outbox.due(MARCH, now) == monthly_outbox.due(MARCH, now) == [row.id]
    first = monthly_outbox.claim(row.id, now)
    assert first is not None and monthly_outbox.claim(row.id, now) is None
    monthly_outbox.sent(first, now)
    later = now + timedelta(hours=1)
    assert monthly_outbox.due(MARCH, later) == [] and monthly_outbox.claim(row.id, later) is None


def test_a_coordinator_without_an_address_is_one_line_and_exit_1(
        monthly: SmtpServer, settings: Any) -> None:
    settings.USAGE_MAIL = mail_settings(domain="")  # erin has no address now
    err = StringIO()
    with pytest.raises(RunError, match="2 monthly emails not sent"):
        call_command("usage_monthly", "--mail", "--month", MARCH, stdout=StringIO(),
                     stderr=err)
    lines = [line for line in err.getvalue().splitlines() if "no address" in line]
    assert lines == [
        "account atlas 2026-03 to erin: no address: no email address: none in the monitor's "
        "account and no CLUSTERWATCH_EMAIL_DOMAIN",
        "account cms 2026-03 to erin: no address: no email address: none in the monitor's "
        "account and no CLUSTERWATCH_EMAIL_DOMAIN"]
    assert [m["To"] for m in monthly.wait_for(1)] == ["dave@lab.example"]


def test_usage_and_configuration_errors(monthly: SmtpServer, settings: Any,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(CommandError, match="exclude each other") as refused:
        send("--json")
    assert refused.value.returncode == 2
    monkeypatch.delenv(VARIABLE)
    with pytest.raises(ConfigError, match=f"{VARIABLE} is not set"):
        send()
    settings.USAGE_MAIL = mail_settings(sender="")
    with pytest.raises(ConfigError, match="CLUSTERWATCH_EMAIL_FROM is not set"):
        send()
    assert not MonthlyMail.objects.exists() and monthly.messages == []


def test_the_console_script_exits_78_without_coordinators(
        tmp_path: Path, site: UsageSite, migrated: Path) -> None:
    done = run(tmp_path, site, "usage_monthly", "--mail",
               CLUSTERWATCH_EMAIL_FROM="clusterwatch@monitor.test",
               CLUSTERWATCH_EMAIL_BASE_URL="https://monitor.test")
    assert done.returncode == 78, done.stderr
    assert VARIABLE in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_the_timer_runs_the_monthly_email_on_the_first_persistently() -> None:
    service = (ROOT / "deploy/systemd/clusterwatch-usage-monthly.service").read_text()
    timer = (ROOT / "deploy/systemd/clusterwatch-usage-monthly.timer").read_text()
    [command] = [line.split("=", 1)[1] for line in service.splitlines()
                 if line.startswith("ExecStart=")]
    assert command == "/opt/clusterwatch/bin/clusterwatch monitor usage_monthly --mail"
    assert "OnCalendar=*-*-01 06:00:00 UTC" in timer.splitlines()
    assert "Persistent=true" in timer.splitlines()
    # The command the unit names, with the option it passes (tests/examples checks the verb).
    from clusterwatch.monitor.usage.management.commands.usage_monthly import Command

    parser = Command().create_parser("clusterwatch monitor", "usage_monthly")
    assert parser.parse_args(command.split()[3:]).mail is True
