"""The loopback SMTP server (aiosmtpd) holds an answer to DATA until the test releases it."""

from __future__ import annotations

import smtplib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from email.message import EmailMessage

import pytest

from clusterwatch.loopback.services import LOOPBACK, MissingComponent
from clusterwatch.loopback.smtp import SmtpServer
from tests.components import unavailable


@pytest.fixture
def smtp() -> Iterator[SmtpServer]:
    server = SmtpServer()
    try:
        server.__enter__()
    except MissingComponent as missing:
        unavailable(missing)
    try:
        yield server
    finally:
        server.down()


def send(server: SmtpServer, subject: str) -> dict[str, tuple[int, bytes]]:
    message = EmailMessage()
    message["From"], message["To"], message["Subject"] = "a@example.org", "b@example.org", subject
    message.set_content("hello")
    with smtplib.SMTP(LOOPBACK, server.port, timeout=900) as client:
        return client.send_message(message)  # {} when every recipient was accepted


def test_it_holds_the_answer_to_data_until_released(smtp: SmtpServer) -> None:
    smtp.hold()
    with ThreadPoolExecutor(1) as pool:
        held = pool.submit(send, smtp, "held")
        [message] = smtp.wait_held()
        assert message["Subject"] == "held"
        assert [m["Subject"] for m in smtp.messages] == ["held"]  # taken before the hold
        assert not held.done()  # the client is still waiting for its "250"
        assert smtp.release() == 1
        assert held.result(timeout=60) == {}
    assert send(smtp, "after") == {}  # released: holding has stopped
    assert smtp.release() == 0  # nothing was held any more


def test_it_serves_other_sessions_while_one_answer_is_held(smtp: SmtpServer) -> None:
    smtp.hold()
    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(send, smtp, "first")
        smtp.wait_held()
        second = pool.submit(send, smtp, "second")
        assert [m["Subject"] for m in smtp.wait_held(2)] == ["first", "second"]
        assert not first.done() and not second.done()
        assert smtp.release() == 2
        assert [f.result(timeout=60) for f in (first, second)] == [{}, {}]


def test_it_drops_held_answers_when_it_goes_down(smtp: SmtpServer) -> None:
    smtp.hold()
    with ThreadPoolExecutor(1) as pool:
        held = pool.submit(send, smtp, "dropped")
        smtp.wait_held()
        smtp.down()  # returns: no held session keeps the server's thread
        with pytest.raises(smtplib.SMTPException):
            held.result(timeout=60)
    with pytest.raises(TimeoutError, match=r"0 of 1 SMTP answers held .* 1 messages taken"):
        smtp.wait_held(timeout=0.2)


def test_it_answers_a_refused_data_at_once_while_holding(smtp: SmtpServer) -> None:
    smtp.hold()
    smtp.refuse("451 4.3.0 try again later")
    with pytest.raises(smtplib.SMTPDataError, match="try again later"):
        send(smtp, "refused")  # nothing taken, so nothing held: the client is not kept
    assert smtp.messages == [] and smtp.release() == 0


def test_it_counts_connections_and_drops_a_session_between_two_messages(
    smtp: SmtpServer,
) -> None:
    message = EmailMessage()
    message["From"], message["To"], message["Subject"] = "a@example.org", "b@example.org", "1"
    message.set_content("hello")
    with smtplib.SMTP(LOOPBACK, smtp.port, timeout=30) as client:
        client.send_message(message)
        smtp.drop_after(1)
        with pytest.raises(smtplib.SMTPServerDisconnected):
            client.send_message(message)
    assert send(smtp, "2") == {}  # a new connection is served again
    assert smtp.connections == 2 and len(smtp.messages) == 2


def test_it_answers_the_first_messages_then_holds(smtp: SmtpServer) -> None:
    smtp.hold(after=1)
    assert send(smtp, "answered") == {}
    with ThreadPoolExecutor(1) as pool:
        held = pool.submit(send, smtp, "held")
        [message] = smtp.wait_held()
        assert message["Subject"] == "held" and not held.done()
        assert smtp.release() == 1
        assert held.result(timeout=30) == {}
