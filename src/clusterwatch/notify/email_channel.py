"""Email: one message per batch, through an SMTP server (`smtp_exchange`).

A batch is delivered when the server answered 250 to the end of DATA. The password is read
from its file when the channel is built and kept for the login alone: never in a repr, a
log line, an error or a reply kept for the status views.
"""

from __future__ import annotations

import email.utils
import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from clusterwatch.notify import channel as ch
from clusterwatch.notify.email_message import compose
from clusterwatch.notify.event import Event
from clusterwatch.notify.smtp_exchange import Envelope, SmtpSettings, send_message

SendMessage = Callable[
    [SmtpSettings, str, Optional[ssl.SSLContext], Envelope, bytes], ch.SendResult]


@dataclass(frozen=True)
class EmailSettings:
    smtp: SmtpSettings
    sender: str  # header form: "Pool watch <watch@example.org>" or the address alone
    recipients: tuple[str, ...]  # header forms, in order
    password_file: Optional[Path] = None  # with smtp.username
    ca_file: Optional[Path] = None  # a private CA for tls and starttls; None: the system's

    def envelope(self) -> Envelope:
        return Envelope(_address(self.sender), tuple(_address(r) for r in self.recipients))


class EmailChannel(ch.Channel):
    kind = "email"
    max_batch = 50  # events per message: a mass outage is a few messages, not hundreds

    def __init__(self, name: str, settings: EmailSettings, password: str = "",
                 context: Optional[ssl.SSLContext] = None,
                 transport: SendMessage = send_message) -> None:
        super().__init__(name)
        self._settings = settings
        self._password = password
        self._context = context
        self._transport = transport
        self._envelope = settings.envelope()

    def __repr__(self) -> str:
        smtp = self._settings.smtp
        return (f"EmailChannel(name={self.name!r}, server={smtp.host}:{smtp.port}, "
                f"security={smtp.security!r})")

    def send(self, events: Sequence[Event], now: float) -> ch.SendResult:
        message = compose(events, now, self.name, self._settings.sender,
                          self._settings.recipients)
        return self._transport(self._settings.smtp, self._password, self._context,
                                  self._envelope, message.as_bytes())


def _address(header_form: str) -> str:
    return email.utils.parseaddr(header_form)[1]
