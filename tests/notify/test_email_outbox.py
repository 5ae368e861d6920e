"""The email channel through the outbox (`deliver()`) and the status views' channel sections:
a refused batch stays queued, a refusal for good becomes dead letters with the server's words
shown beside them, and a recipient refused among others is recorded."""

from __future__ import annotations

import io
import json
import logging
from typing import Callable

import pytest

from clusterwatch.loopback.smtp import SmtpServer
from clusterwatch.notify import channel as ch
from clusterwatch.notify.incident import Action
from clusterwatch.notify.outbox import Outbox, deliver
from clusterwatch.notify.outbox_status import ChannelWording, outbox_sections, write_channels
from tests.notify.email_support import RECIPIENTS, channel, lines_of
from tests.notify.support import T0

Servers = Callable[..., SmtpServer]
WORDING = ChannelWording(no_channels="none", dead_letter_advice="run redeliver")


def outbox_with(count: int) -> Outbox:
    outbox = Outbox()
    outbox.attach(["mail"])
    for i in range(count):
        outbox.append(T0 + i, Action.ALERT, f"node:wn{i:02d}.example.org", "missing",
                      f"inc-{i:02d}")
    return outbox


def reload(outbox: Outbox) -> Outbox:
    return Outbox.from_json(json.loads(json.dumps(outbox.to_json())))


def status_text(outbox: Outbox, now: float) -> str:
    out = io.StringIO()
    write_channels(outbox_sections(outbox, now)["channels"], out, WORDING)
    return out.getvalue()


def test_it_sends_fifty_events_a_message_and_keeps_the_rest_for_the_next_run(
    smtp_servers: Servers,
) -> None:
    server = smtp_servers()
    outbox = outbox_with(60)
    mail = channel(server)
    deliver(outbox, [mail], T0 + 100)
    deliver(outbox, [mail], T0 + 160)
    assert [len(lines_of(message)) for message in server.messages] == [50, 10]
    assert outbox.pending("mail") == [] and outbox.events == []


def test_a_temporary_refusal_keeps_the_batch_and_shows_the_servers_words(
    smtp_servers: Servers,
) -> None:
    server = smtp_servers()
    outbox = outbox_with(2)
    server.refuse("452 4.3.1 insufficient system storage")
    results = deliver(outbox, [channel(server)], T0 + 60)
    assert results["mail"].outcome == ch.RETRY
    outbox = reload(outbox)
    summary = outbox_sections(outbox, T0 + 90)["channels"]["mail"]
    assert (summary["last_error"], summary["last_error_reply"]) == (
        "smtp_452", "452 4.3.1 insufficient system storage")
    assert status_text(outbox, T0 + 90).splitlines()[0] == (
        "channel mail: 2 pending, 0 dead letters, last error smtp_452 at 2026-10-02 14:17:00Z "
        "(452 4.3.1 insufficient system storage)")
    server.refuse(None)
    deliver(outbox, [channel(server)], T0 + 120)
    assert len(server.messages) == 1 and outbox.pending("mail") == []


def test_a_permanent_refusal_sets_the_batch_aside_with_the_servers_words_until_redelivered(
    smtp_servers: Servers, caplog: pytest.LogCaptureFixture,
) -> None:
    server = smtp_servers()
    outbox = outbox_with(2)
    server.refuse("550 5.7.1 message content rejected")
    with caplog.at_level(logging.ERROR):
        deliver(outbox, [channel(server)], T0 + 60)
    assert "smtp_550: 550 5.7.1 message content rejected" in caplog.text
    server.down()  # a later failure of another kind does not hide why they were set aside
    outbox.append(T0 + 90, Action.ALERT, "node:wn99.example.org", "missing", "inc-99")
    deliver(outbox, [channel(server)], T0 + 120)
    outbox = reload(outbox)
    summary = outbox_sections(outbox, T0 + 150)["channels"]["mail"]
    assert summary["last_error"] == "refused"
    assert summary["rejection"] == {"t": T0 + 60, "error": "smtp_550",
                                    "reply": "550 5.7.1 message content rejected"}
    lines = status_text(outbox, T0 + 150).splitlines()
    assert lines[0].startswith("channel mail: 1 pending, 2 dead letters, last error refused")
    assert lines[-2:] == ["  rejected smtp_550 at 2026-10-02 14:17:00Z: 550 5.7.1 message "
                          "content rejected", "run redeliver"]
    assert [attempt["reply"] for attempt in outbox_sections(outbox, T0)["recent_attempts"]
            if "reply" in attempt] == ["550 5.7.1 message content rejected"]

    assert outbox.requeue_dead("mail") == 2
    assert outbox_sections(outbox, T0 + 150)["channels"]["mail"]["rejection"] is None
    assert "rejected smtp_550" not in status_text(outbox, T0 + 150)


def test_a_recipient_refused_for_good_among_others_is_delivered_and_recorded(
    smtp_servers: Servers, caplog: pytest.LogCaptureFixture,
) -> None:
    server = smtp_servers()
    outbox = outbox_with(1)
    server.refuse_rcpt(RECIPIENTS[1], "550 5.1.1 no such user")
    with caplog.at_level(logging.WARNING):
        results = deliver(outbox, [channel(server)], T0 + 60)
    assert results["mail"].ok and outbox.pending("mail") == []
    assert server.envelopes == [("watch@example.org", [RECIPIENTS[0]])]
    assert f"delivered 1 event(s), but smtp_550: <{RECIPIENTS[1]}>: 550 5.1.1" in caplog.text
    summary = outbox_sections(reload(outbox), T0 + 90)["channels"]["mail"]
    assert summary["dead_letters"] == [] and summary["last_success_t"] == T0 + 60
    assert summary["last_error_reply"] == f"<{RECIPIENTS[1]}>: 550 5.1.1 no such user"


def test_an_outbox_saved_before_replies_existed_loads_unchanged() -> None:
    old = {"next_seq": 1, "events": [], "history": [{"t": T0, "channel": "mail",
                                                     "outcome": "retry", "seqs": [1],
                                                     "error": "timeout"}],
           "channels": {"mail": {"cursor": 0, "not_before": 0.0, "dead": [],
                                 "last_error": "timeout", "last_error_t": T0,
                                 "last_success_t": None}}}
    outbox = Outbox.from_json(old)
    assert outbox.to_json() == {**old, "only_for": {}}
