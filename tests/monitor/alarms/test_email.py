"""The monitor's alarms by email, end to end: `evaluate_alarms` (run_alarms) through an email
channel of alarms.toml to a real SMTP server (aiosmtpd) speaking TLS from the first byte with
a login; `alarms_status` shows what was kept and why; the password is shown nowhere."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path
from typing import Any, Callable, Optional

import pytest
from django.core.management import call_command

from clusterwatch.loopback.smtp import SmtpServer
from clusterwatch.monitor.alarms import outbox_store
from clusterwatch.monitor.core.models import Alarm, AlarmOutbox
from clusterwatch.notify.smtp_exchange import secret_forms
from tests.monitor.alarms.support import make_record, put, ssl_failing

USER = "monitor"
PASSWORD = "cwALARM-smtp-pw 7730/+="  # must never be shown, in any form
Servers = Callable[..., SmtpServer]
ALERT_LINE = "ALERT panda_unreachable pandaharvester01: every fetch failed with SSLError (6 of 6)"

pytestmark = pytest.mark.django_db


@pytest.fixture
def mail(tmp_path: Path, settings: Any, smtp_servers: Servers,
         smtp_pki: dict[str, Any]) -> SmtpServer:
    cert = smtp_pki["server"]
    server = smtp_servers(security="tls", cert=(str(cert.cert), str(cert.key)),
                          login=(USER, PASSWORD))
    secret = tmp_path / "smtp_password"
    secret.write_text(PASSWORD + "\n")
    secret.chmod(0o600)
    path = tmp_path / "alarms.toml"
    path.write_text(f'[[channels]]\ntype = "email"\nname = "mail"\nsmtp_host = "localhost"\n'
                    f'smtp_port = {server.port}\nsecurity = "tls"\nusername = "{USER}"\n'
                    f'password_file = "smtp_password"\nca_file = "{smtp_pki["ca"].cert}"\n'
                    'from = "monitor@example.org"\nto = ["harvester-ops@example.org"]\n'
                    "timeout_s = 5\n")
    settings.ALARMS_CONFIG = path
    return server


def command(name: str, *args: str, shown: Optional[list[str]] = None) -> str:
    """The command's stdout; `shown` collects stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    call_command(name, *args, stdout=out, stderr=err)
    if shown is not None:
        shown.extend([out.getvalue(), err.getvalue()])
    return out.getvalue()


def fresh(age: float = 30.0) -> float:
    return time.time() - age


def body(message: Any) -> str:
    return str(message.get_body(preferencelist=("plain",)).get_content()).replace("\r\n", "\n")


def test_it_mails_an_alarm_and_its_recovery_across_an_outage(mail: SmtpServer) -> None:
    put("pandaharvester01", ssl_failing(collected_at=fresh(60)))
    mail.down()
    out = command("evaluate_alarms")
    assert "1 raised, 0 recovered, 1 open; mail retry" in out
    status = command("alarms_status")
    assert "channel mail: 1 pending, 0 dead letters, last error refused" in status

    mail.up()
    assert "mail delivered" in command("evaluate_alarms")
    [alert] = mail.messages
    assert mail.secure == [True] and mail.logins == [USER]
    assert alert["Subject"].startswith("[clusterwatch] ALERT panda_unreachable:pandaharvester01")
    assert ALERT_LINE in body(alert)
    incident = Alarm.objects.get().incident
    assert f"(incident {incident})" in body(alert)

    command("evaluate_alarms")
    assert len(mail.messages) == 1  # nothing sent again while the alarm stays open
    put("pandaharvester01", make_record(collected_at=fresh(5)))
    assert "0 raised, 1 recovered, 0 open; mail delivered" in command("evaluate_alarms")
    recovery = mail.messages[1]
    assert recovery["Subject"].startswith(
        "[clusterwatch] RECOVER panda_unreachable:pandaharvester01")
    assert f"(incident {incident})" in body(recovery)
    assert outbox_store.load().pending("mail") == []


def test_a_refusal_for_good_shows_the_servers_words_in_alarms_status(mail: SmtpServer) -> None:
    shown: list[str] = []
    mail.refuse("554 5.7.1 rejected by local policy")
    put("pandaharvester01", ssl_failing(collected_at=fresh(60)))
    assert "mail rejected" in command("evaluate_alarms", shown=shown)
    status = command("alarms_status", shown=shown)
    assert "channel mail: 0 pending, 1 dead letters, last error smtp_554" in status
    assert "  DEAD: " in status and ALERT_LINE in status
    assert "  rejected smtp_554 at " in status
    assert ": 554 5.7.1 rejected by local policy" in status
    data = json.loads(command("alarms_status", "--json", shown=shown))
    assert data["channels"]["mail"]["rejection"]["reply"] == "554 5.7.1 rejected by local policy"

    mail.refuse(None)
    command("redeliver_alarms", shown=shown)
    command("evaluate_alarms", shown=shown)
    assert len(mail.messages) == 1 and ALERT_LINE in body(mail.messages[0])
    stored = json.dumps([row.outbox for row in AlarmOutbox.objects.all()])
    for form in [*secret_forms(USER, PASSWORD), "7730"]:
        assert form not in stored
        assert all(form not in output for output in shown)
