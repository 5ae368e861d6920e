"""The email channel against a real SMTP server on loopback (aiosmtpd): the message, TLS from
the first byte and STARTTLS with a verified certificate and a login, and what each reply means
for the batch."""

from __future__ import annotations

import dataclasses
import socket
import threading
import time
from collections.abc import Iterator
from email.utils import parsedate_to_datetime
from typing import Any, Callable

import pytest

from clusterwatch.loopback.smtp import SmtpServer
from clusterwatch.notify import channel as ch
from clusterwatch.notify.smtp_exchange import REDACTED, clean, secret_forms
from tests.notify.email_support import (
    PASSWORD,
    RECIPIENTS,
    SENDER,
    USER,
    channel,
    html_of,
    lines_of,
)
from tests.notify.support import T0, make_event

Servers = Callable[..., SmtpServer]
EVENTS = [
    make_event(1, target="node:wn12.example.org", status="missing", incident="3f2a9c1b"),
    make_event(2, T0 + 60, target="gpu:192.0.2.10:9100", incident="464531a4"),
    make_event(3, T0 + 120, "recover", "node:wn07.example.org", "present", "77aa0b12"),
]


def test_it_sends_one_message_per_batch_with_the_slack_lines_and_an_html_table(
    smtp_servers: Servers,
) -> None:
    server = smtp_servers()
    result = channel(server).send(EVENTS, T0 + 180)
    assert result == ch.SendResult(ch.DELIVERED)
    [message] = server.messages
    assert server.envelopes == [("watch@example.org", list(RECIPIENTS))]
    assert message["Subject"] == ("[clusterwatch] 2 alerts, 1 recovery: node:wn12.example.org, "
                                  "gpu:192.0.2.10:9100, node:wn07.example.org")
    assert message["From"] == SENDER
    assert message["To"] == ", ".join(RECIPIENTS)
    assert parsedate_to_datetime(message["Date"]).timestamp() == T0 + 180
    assert message["Message-ID"].endswith(".clusterwatch@example.org>")
    assert message["Auto-Submitted"] == "auto-generated"
    assert lines_of(message) == [event.line() for event in EVENTS]  # Slack's text, line by line
    page = html_of(message)
    for event in EVENTS:
        assert f"<td>{event.target}</td>" in page and f"<td>{event.incident}</td>" in page
    assert "<td>RECOVER</td>" in page and "<td>2026-10-02 14:16:00Z</td>" in page


def test_its_subject_names_the_change_and_the_target_of_a_single_event(
    smtp_servers: Servers,
) -> None:
    server = smtp_servers()
    assert channel(server).send(EVENTS[:1], T0).ok
    assert server.messages[0]["Subject"] == "[clusterwatch] ALERT node:wn12.example.org (missing)"


def test_a_batch_sent_again_carries_the_same_message_id_and_another_batch_another(
    smtp_servers: Servers,
) -> None:
    server = smtp_servers()
    mail = channel(server)
    for batch, now in ((EVENTS, T0), (EVENTS, T0 + 60), (EVENTS[:2], T0 + 60)):
        assert mail.send(batch, now).ok
    ids = [message["Message-ID"] for message in server.messages]
    assert ids[0] == ids[1] != ids[2]


def test_it_keeps_non_ascii_details_readable_in_7_bit(smtp_servers: Servers) -> None:
    server = smtp_servers()
    event = make_event(target="panda_unreachable:pandaharvester01", status="SSLError")
    detailed = dataclasses.replace(
        event, detail="pandaharvester01: every fetch failed — SSLError (6 of 6)")
    assert channel(server).send([detailed], T0).ok
    [message] = server.messages
    assert lines_of(message) == [detailed.line()]
    assert "—" in html_of(message)


@pytest.mark.parametrize("security", ["starttls", "tls"])
@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_it_logs_in_over_tls_verifying_the_servers_certificate(
    smtp_servers: Servers, smtp_pki: dict[str, Any], security: str, host: str,
) -> None:
    cert = smtp_pki["server"]
    server = smtp_servers(security=security, cert=(str(cert.cert), str(cert.key)),
                          login=(USER, PASSWORD))
    mail = channel(server, security, ca=smtp_pki["ca"].cert, username=USER, password=PASSWORD,
                   host=host)
    assert mail.send(EVENTS, T0) == ch.SendResult(ch.DELIVERED)
    assert server.secure == [True] and server.logins == [USER]
    assert server.connections == 1  # the greeting after STARTTLS is the same connection


@pytest.mark.parametrize("security", ["starttls", "tls"])
def test_it_sends_nothing_to_a_server_whose_certificate_its_ca_did_not_sign(
    smtp_servers: Servers, smtp_pki: dict[str, Any], security: str,
) -> None:
    impostor = smtp_pki["impostor"]
    server = smtp_servers(security=security, cert=(str(impostor.cert), str(impostor.key)),
                          login=(USER, PASSWORD))
    result = channel(server, security, ca=smtp_pki["ca"].cert, username=USER,
                     password=PASSWORD).send(EVENTS, T0)
    assert (result.outcome, result.error) == (ch.RETRY, "tls")
    assert result.reply is not None and "certificate" in result.reply
    assert server.messages == [] and server.failed_logins == 0


def test_it_never_falls_back_to_clear_text_when_starttls_is_not_offered(
    smtp_servers: Servers, smtp_pki: dict[str, Any],
) -> None:
    server = smtp_servers(login=(USER, PASSWORD))  # plain: no STARTTLS offered
    result = channel(server, "starttls", ca=smtp_pki["ca"].cert, username=USER,
                     password=PASSWORD).send(EVENTS, T0)
    assert result == ch.SendResult(ch.REJECTED, "smtp_no_starttls",
                                   reply="the server does not offer STARTTLS")
    assert server.messages == [] and server.failed_logins == 0


def test_it_keeps_the_batch_on_a_temporary_refusal_with_the_servers_words(
    smtp_servers: Servers,
) -> None:
    server = smtp_servers()
    server.refuse("451 4.3.0 try again later")
    result = channel(server).send(EVENTS, T0)
    assert result == ch.SendResult(ch.RETRY, "smtp_451", reply="451 4.3.0 try again later")


def test_it_rejects_the_batch_on_a_permanent_refusal_with_the_servers_words(
    smtp_servers: Servers,
) -> None:
    server = smtp_servers()
    server.refuse("554 5.6.0 message refused\r\n")
    result = channel(server).send(EVENTS, T0)
    assert result == ch.SendResult(ch.REJECTED, "smtp_554", reply="554 5.6.0 message refused")


def test_a_wrong_password_is_rejected_and_an_echoed_one_never_kept(
    smtp_servers: Servers,
) -> None:
    server = smtp_servers(login=(USER, "the right one"), echo_auth=True)
    result = channel(server, username=USER, password=PASSWORD).send(EVENTS, T0)
    assert (result.outcome, result.error) == (ch.REJECTED, "smtp_535")
    assert result.reply is not None and REDACTED in result.reply and USER in result.reply
    assert PASSWORD not in repr(result) and "8817" not in repr(result)
    assert server.failed_logins >= 1 and server.messages == []


def test_it_sends_to_the_recipients_left_when_one_is_refused_for_good(
    smtp_servers: Servers,
) -> None:
    server = smtp_servers()
    server.refuse_rcpt("ops@example.org", "550 5.1.1 no such user")
    result = channel(server).send(EVENTS, T0)
    assert result == ch.SendResult(ch.DELIVERED, "smtp_550",
                                   reply="<ops@example.org>: 550 5.1.1 no such user")
    assert server.envelopes == [("watch@example.org", ["oncall@example.org"])]


def test_it_sends_to_nobody_while_one_recipient_is_refused_for_now(
    smtp_servers: Servers,
) -> None:
    server = smtp_servers()
    server.refuse_rcpt("oncall@example.org", "450 4.2.1 mailbox busy")
    mail = channel(server)
    result = mail.send(EVENTS, T0)
    assert result == ch.SendResult(ch.RETRY, "smtp_450",
                                   reply="<oncall@example.org>: 450 4.2.1 mailbox busy")
    assert server.messages == []  # later, all of them together: never twice to some
    server.refuse_rcpt("oncall@example.org", None)
    assert mail.send(EVENTS, T0 + 60).ok
    assert server.envelopes == [("watch@example.org", list(RECIPIENTS))]


def test_it_rejects_the_batch_when_every_recipient_is_refused(smtp_servers: Servers) -> None:
    server = smtp_servers()
    for address in RECIPIENTS:
        server.refuse_rcpt(address, "550 5.7.1 relaying denied")
    result = channel(server).send(EVENTS, T0)
    assert (result.outcome, result.error) == (ch.REJECTED, "smtp_550")
    assert result.reply == "<ops@example.org>: 550 5.7.1 relaying denied"


def test_it_keeps_the_batch_while_the_server_is_down(smtp_servers: Servers) -> None:
    server = smtp_servers()
    server.down()
    assert channel(server).send(EVENTS, T0) == ch.SendResult(ch.RETRY, "refused")
    server.up()
    assert channel(server).send(EVENTS, T0).ok


def test_it_keeps_the_batch_when_the_server_drops_the_session(smtp_servers: Servers) -> None:
    server = smtp_servers()
    server.drop_after(0)  # closed at MAIL FROM, with no answer
    assert channel(server).send(EVENTS, T0) == ch.SendResult(ch.RETRY, "disconnected")


def test_it_gives_up_on_a_held_answer_at_its_timeout(smtp_servers: Servers) -> None:
    server = smtp_servers()
    server.hold()
    started = time.monotonic()
    result = channel(server, timeout_s=0.5).send(EVENTS, T0)
    assert result == ch.SendResult(ch.RETRY, "timeout")
    assert time.monotonic() - started < 0.5 + 2.0  # a deadline for the failure message


@pytest.fixture
def dripping_greeter() -> Iterator[int]:
    """A port where a server greets one byte every 0.05 s, for 20 s: each read returns fast,
    so only a deadline over the whole exchange stops a client in time."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            with conn:
                for byte in b"220-" + b"x" * 400 + b"\r\n220 ready\r\n":
                    if stop.wait(0.05):
                        break
                    try:
                        conn.sendall(bytes([byte]))
                    except OSError:
                        break

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join(5)
        listener.close()


def test_it_ends_the_whole_exchange_by_its_timeout_however_the_server_drips(
    smtp_servers: Servers, dripping_greeter: int,
) -> None:
    server = smtp_servers()
    server.port = dripping_greeter  # the settings point at the dripping port
    started = time.monotonic()
    result = channel(server, timeout_s=0.5).send(EVENTS, T0)
    assert result == ch.SendResult(ch.RETRY, "timeout")
    assert time.monotonic() - started < 0.5 + 2.0


def test_a_kept_reply_is_one_bounded_line_without_the_password_in_any_form() -> None:
    forms = secret_forms(USER, PASSWORD)
    said = clean(b"535 5.7.8 bad\r\n535 " + b" ".join(f.encode() for f in forms)
                 + b"\x00\x1b[31m" + b"y" * 400, forms)
    assert "\n" not in said and "\x1b" not in said and len(said) == ch.REPLY_LIMIT
    assert all(form not in said for form in forms) and said.count(REDACTED) >= 3
