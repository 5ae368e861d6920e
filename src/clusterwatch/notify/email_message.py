"""The email for one batch of events: a subject naming the change, text and HTML bodies.

The text body is the Slack message: one line per event (`Event.line()`), in queue order; the
HTML alternative holds the same facts in a table. The subject names the change and the
target of a single event (`[clusterwatch] ALERT node:wn12.example.org (missing)`), or counts
a batch and names its first targets (`[clusterwatch] 3 alerts, 1 recovery: node:wn12...,
gpu:192.0.2.10:9100, +2 more`).

The Message-ID is a digest of the channel and the events (incident, transition, time,
target), so a batch sent again after a lost acknowledgement carries the same one, and mail
clients and archives can tell the copy from a new message.
"""

from __future__ import annotations

import email.policy
import email.utils
import hashlib
import html
from collections.abc import Sequence
from email.message import EmailMessage

from clusterwatch.notify.event import Event, format_utc
from clusterwatch.notify.incident import Action

PREFIX = "[clusterwatch]"
SUBJECT_TARGETS = 3  # targets a batch's subject names before "+N more"
SUBJECT_LIMIT = 200  # characters; a long detail or target name is cut
# SMTP's policy (CRLF line ends), with 7-bit bodies: quoted-printable or base64 where the
# text is not ASCII, since a server without 8BITMIME must still take the message.
POLICY = email.policy.SMTP.clone(cte_type="7bit")
FOOTER = ("Sent by clusterwatch. An alert and its recovery share an incident id; delivery "
          "is at least once, so a line seen twice with the same incident id is a repeat.")


def compose(events: Sequence[Event], now: float, channel: str, sender: str,
            recipients: Sequence[str]) -> EmailMessage:
    """The message for `events` (at least one). `sender` and `recipients` are header forms
    (`Pool watch <watch@example.org>` or the address alone), checked by the configuration."""
    message = EmailMessage(policy=POLICY)
    message["Subject"] = subject(events)
    message["From"] = sender
    message["To"] = ", ".join(recipients)
    message["Date"] = email.utils.formatdate(now, usegmt=True)
    message["Message-ID"] = message_id(events, channel, _domain(sender))
    message["Auto-Submitted"] = "auto-generated"  # RFC 3834: no vacation replies to it
    message.set_content(text_body(events))
    message.add_alternative(html_body(events), subtype="html")
    return message


def subject(events: Sequence[Event]) -> str:
    if len(events) == 1:
        event = events[0]
        text = f"{PREFIX} {event.action.value.upper()} {event.target} ({event.status})"
    else:
        alerts = sum(1 for event in events if event.action is Action.ALERT)
        recoveries = len(events) - alerts
        counts = [_count(alerts, "alert", "alerts"),
                  _count(recoveries, "recovery", "recoveries")]
        targets = list(dict.fromkeys(event.target for event in events))
        named = ", ".join(targets[:SUBJECT_TARGETS])
        if len(targets) > SUBJECT_TARGETS:
            named += f", +{len(targets) - SUBJECT_TARGETS} more"
        text = f"{PREFIX} {', '.join(c for c in counts if c)}: {named}"
    text = " ".join(text.split())  # a header holds no line break
    return text if len(text) <= SUBJECT_LIMIT else text[: SUBJECT_LIMIT - 3] + "..."


def text_body(events: Sequence[Event]) -> str:
    lines = [event.line() for event in events]
    return "\n".join(lines) + "\n\n-- \n" + FOOTER + "\n"


def html_body(events: Sequence[Event]) -> str:
    rows = "\n".join(
        "<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in (
            format_utc(event.t), event.action.value.upper(), event.target,
            event.detail or event.status, event.incident)) + "</tr>"
        for event in events)
    return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>"
            f"{html.escape(subject(events))}</title></head><body>\n"
            "<table border=\"1\" cellpadding=\"4\" cellspacing=\"0\">\n"
            "<tr><th>Detected (UTC)</th><th>Transition</th><th>Target</th>"
            "<th>Status</th><th>Incident</th></tr>\n"
            f"{rows}\n</table>\n<p>{html.escape(FOOTER)}</p>\n</body></html>\n")


def message_id(events: Sequence[Event], channel: str, domain: str) -> str:
    key = "\0".join([channel, *(f"{e.incident}|{e.action.value}|{e.t!r}|{e.target}"
                                for e in events)])
    digest = hashlib.blake2b(key.encode(), digest_size=16).hexdigest()
    return f"<{digest}.clusterwatch@{domain}>"


def _count(number: int, one: str, many: str) -> str:
    if number == 0:
        return ""
    return f"{number} {one if number == 1 else many}"


def _domain(sender: str) -> str:
    address = email.utils.parseaddr(sender)[1]
    return address.rpartition("@")[2] or "localhost"
