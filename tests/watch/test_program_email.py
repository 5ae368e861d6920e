"""The pool watch's email channel, end to end: the installed console script against the
loopback fakes (condor_status, Prometheus) and a real SMTP server (aiosmtpd) speaking
STARTTLS with a certificate from a test CA and a login.

An SMTP outage between two alerts (the server down, then refusing for now) loses nothing and
duplicates nothing; a refusal for good leaves dead letters with the server's words in
`watch status`; the password is never in any output, log, state or health file; a bad email
setting is a configuration error in one line, exit 78.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from clusterwatch.loopback.smtp import SmtpServer
from clusterwatch.notify.smtp_exchange import secret_forms

from .program import Run, run_watch
from .support import Pool

W1, W2 = "worker1.example.org", "worker2.example.org"
G1, G2 = "192.0.2.10:9100", "192.0.2.11:9100"
USER = "clusterwatch"
PASSWORD = "cwWATCH-smtp-pw 5521/+="  # must never be shown, in any form
EXIT_CONFIG = 78
Servers = Callable[..., SmtpServer]


def mail_toml(server: SmtpServer, ca: Path, extra: str = "") -> str:
    return (f'[[channels]]\ntype = "email"\nname = "mail"\nsmtp_host = "127.0.0.1"\n'
            f'smtp_port = {server.port}\nsecurity = "starttls"\nusername = "{USER}"\n'
            f'password_file = "smtp_password"\nca_file = "{ca}"\n'
            f'from = "Pool watch <watch@example.org>"\nto = ["ops@example.org"]\n'
            f"timeout_s = 5\n{extra}")


@pytest.fixture
def mailed(pool: Pool, smtp_servers: Servers, smtp_pki: dict[str, Any]) -> SmtpServer:
    """The pool, its only channel an email channel to a STARTTLS server with a login."""
    cert = smtp_pki["server"]
    server = smtp_servers(security="starttls", cert=(str(cert.cert), str(cert.key)),
                          login=(USER, PASSWORD))
    (pool.config_dir / "slack_webhook").unlink()
    secret = pool.config_dir / "smtp_password"
    secret.write_text(PASSWORD + "\n")
    secret.chmod(0o600)
    pool.write_toml(mail_toml(server, smtp_pki["ca"].cert))
    return server


def gpus(pool: Pool, stale: set[str]) -> None:
    now = time.time()
    pool.set_machines([W1, W2])
    pool.set_gpu_mtimes({g: now - (2000 if g in stale else 20) for g in (G1, G2)}, now)


def status(pool: Pool) -> dict[str, Any]:
    done = run_watch(pool, "status", "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def mail_lines(server: SmtpServer) -> list[list[str]]:
    """The event lines of each received message (its text body before the signature)."""
    bodies = [message.get_body(preferencelist=("plain",)) for message in server.messages]
    return [str(body.get_content()).replace("\r\n", "\n").split("\n\n-- \n")[0].splitlines()
            for body in bodies if body is not None]


def test_an_smtp_outage_between_two_alerts_loses_nothing_and_duplicates_nothing(
    pool: Pool, mailed: SmtpServer,
) -> None:
    gpus(pool, {G1})
    first = run_watch(pool)
    assert first.returncode == 0, first.stderr
    assert f"ALERT gpu:{G1} (stale)" in first.stdout
    assert len(mailed.messages) == 1 and mailed.secure == [True] and mailed.logins == [USER]

    mailed.down()  # the server is down when the second alert comes
    gpus(pool, {G1, G2})
    second = run_watch(pool)
    assert second.returncode == 0 and f"ALERT gpu:{G2} (stale)" in second.stdout
    assert "channel mail: not delivered (refused)" in second.stderr
    channel = status(pool)["channels"]["mail"]
    assert [event["target"] for event in channel["pending"]] == [f"gpu:{G2}"]
    assert channel["last_error"] == "refused"

    mailed.up()
    mailed.refuse("451 4.3.0 try again later")  # back, but refusing for now
    third = run_watch(pool)
    assert third.returncode == 0 and third.stdout == ""
    shown = run_watch(pool, "status").stdout
    assert ("channel mail: 1 pending, 0 dead letters, last error smtp_451 at " in shown
            and "(451 4.3.0 try again later)" in shown), shown
    assert len(mailed.messages) == 1

    mailed.refuse(None)
    assert run_watch(pool).returncode == 0
    assert run_watch(pool).returncode == 0  # nothing left to send
    lines = mail_lines(mailed)
    assert len(lines) == 2, lines
    assert [len(message) for message in lines] == [1, 1]
    assert f" ALERT gpu:{G1} (stale) incident " in lines[0][0]
    assert f" ALERT gpu:{G2} (stale) incident " in lines[1][0]
    assert mailed.messages[1]["Subject"] == f"[clusterwatch] ALERT gpu:{G2} (stale)"
    opened = {item["target"]: item["incident"] for item in status(pool)["open_incidents"]}
    assert lines[1][0].endswith(f"incident {opened[f'gpu:{G2}']}")
    channel = status(pool)["channels"]["mail"]
    assert channel["pending"] == [] and channel["dead_letters"] == []


def test_a_refusal_for_good_shows_the_servers_words_and_never_the_password(
    pool: Pool, mailed: SmtpServer, smtp_servers: Servers, smtp_pki: dict[str, Any],
) -> None:
    # A careless server: it refuses the login and quotes what it was sent.
    cert = smtp_pki["server"]
    echoing = smtp_servers(security="starttls", cert=(str(cert.cert), str(cert.key)),
                           login=(USER, "another password"), echo_auth=True)
    pool.write_toml(mail_toml(echoing, smtp_pki["ca"].cert))
    gpus(pool, {G1})
    runs: list[Run] = [run_watch(pool)]
    assert runs[0].returncode == 0, runs[0].stderr
    assert "permanently rejected (smtp_535: 535 5.7.8 credentials clusterwatch:[redacted]" \
        in runs[0].stderr
    runs += [run_watch(pool, "status"), run_watch(pool, "status", "--json")]
    text = runs[1].stdout
    assert "  DEAD: " in text and f"ALERT gpu:{G1} (stale)" in text
    assert "  rejected smtp_535 at " in text and "credentials clusterwatch:[redacted]" in text
    assert json.loads(runs[2].stdout)["channels"]["mail"]["rejection"]["error"] == "smtp_535"

    pool.write_toml(mail_toml(mailed, smtp_pki["ca"].cert))  # fixed: the right server
    runs += [run_watch(pool, "redeliver"), run_watch(pool)]
    assert runs[-1].returncode == 0 and len(mailed.messages) == 1

    forms = [*secret_forms(USER, PASSWORD), "5521"]  # the password, as sent, and a part
    written = [path.read_bytes().decode("utf-8", "replace")
               for path in pool.state_dir.rglob("*") if path.is_file()]
    assert written, "the state directory should hold the state and health files"
    for form in forms:
        for run in runs:
            assert form not in run.stdout and form not in run.stderr
        for content in written:
            assert form not in content


BAD_SETTINGS = {
    "no smtp_host": ('smtp_host = "127.0.0.1"\n', "", "needs smtp_host"),
    "a bad port": ("smtp_port = ", "smtp_port = 0\n# ", "smtp_port must be a port number"),
    "a bad security word": ('security = "starttls"', 'security = "ssl"',
                            "security must be one of starttls, tls, none"),
    "no to": ('to = ["ops@example.org"]\n', "", "to is needed"),
}


@pytest.mark.parametrize(("old", "new", "message"), list(BAD_SETTINGS.values()),
                         ids=list(BAD_SETTINGS))
def test_a_bad_email_setting_exits_78_in_one_line(pool: Pool, mailed: SmtpServer,
                                                  smtp_pki: dict[str, Any], old: str,
                                                  new: str, message: str) -> None:
    text = mail_toml(mailed, smtp_pki["ca"].cert)
    assert old in text
    pool.write_toml(text.replace(old, new, 1))
    for verb in ((), ("status",)):
        done = run_watch(pool, *verb)
        assert done.returncode == EXIT_CONFIG, done.stderr
        assert done.stderr.startswith("clusterwatch: configuration error: ")
        assert len(done.stderr.splitlines()) == 1 and message in done.stderr, done.stderr
    assert mailed.connections == 0


@pytest.mark.parametrize("mode", [0o640, 0o604])
def test_a_password_file_others_can_read_exits_78_in_one_line(pool: Pool, mailed: SmtpServer,
                                                              mode: int) -> None:
    (pool.config_dir / "smtp_password").chmod(mode)
    done = run_watch(pool)
    assert done.returncode == EXIT_CONFIG and done.stdout == ""
    assert len(done.stderr.splitlines()) == 1 and "readable by group or others" in done.stderr
    assert PASSWORD not in done.stderr and mailed.connections == 0
