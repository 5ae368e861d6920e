"""One SMTP connection for all the emails of a run, reopened once when the server drops it.

Each email used to open a connection of its own: a TCP (and TLS) handshake, the server's
greeting (which many servers delay while they look the client up), EHLO and the login, paid
again for every email of a mass ending. A run now opens one at its first send and keeps it.

- A refusal (4xx or 5xx to MAIL, RCPT or DATA, a wrong password) is raised as before, and
  the outbox retries that email later; smtplib resets the session after it, so the next
  email goes over the same connection.
- A drop (the server closed the session: no answer, a 421, a reset socket) of a connection
  that has carried an email already is what servers do to an idle or long session, or when
  they restart: the email is sent once more over a new connection. Had the server taken it
  before dropping, that copy carries the same Message-ID (mail_message), as after a crash.
  A connection that drops at its first email, or again once reopened, is a failed send.
- Any other failure mid-exchange (a timeout) leaves the session in an unknown state: it is
  closed, the send fails, and the next email opens a new connection.
"""

from __future__ import annotations

import contextlib
import smtplib
from typing import Any, Optional

from django.core.mail import EmailMessage, get_connection

_DROPPED = (
    smtplib.SMTPServerDisconnected,
    ConnectionResetError,
    ConnectionAbortedError,
    BrokenPipeError,
)
CLOSING = 421  # RFC 5321: "Service not available, closing transmission channel"


def dropped(exc: BaseException) -> bool:
    """Whether `exc` says the server closed the session (rather than refused an email)."""
    if isinstance(exc, smtplib.SMTPResponseException):
        return exc.smtp_code == CLOSING
    return isinstance(exc, _DROPPED)


class SmtpLink:
    """Django's SMTP backend, opened at the first send and kept open until `close()`."""

    def __init__(self, password: str) -> None:
        self._password = password  # "" without an SMTP login; never logged
        self._backend: Optional[Any] = None
        self._carried = 0  # emails the open connection has carried
        self.opened = 0  # connections opened, for the run's summary line

    def __repr__(self) -> str:
        return f"SmtpLink(opened={self.opened})"

    def send(self, message: EmailMessage) -> None:
        """Send `message`; smtplib.SMTPException or OSError when it was not."""
        reused = self._backend is not None and self._carried > 0
        try:
            self._send_once(message)
        except (smtplib.SMTPException, OSError) as exc:
            if not (reused and dropped(exc)):
                raise
            self._send_once(message)  # the one reconnect

    def close(self) -> None:
        backend, self._backend, self._carried = self._backend, None, 0
        if backend is not None:
            with contextlib.suppress(smtplib.SMTPException, OSError):
                backend.close()  # QUIT, or just the socket when the server is gone

    def __enter__(self) -> SmtpLink:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _send_once(self, message: EmailMessage) -> None:
        if self._backend is None:
            backend = get_connection(password=self._password or None, fail_silently=False)
            try:
                backend.open()  # raises: refused, unreachable, a wrong login
            except BaseException:
                with contextlib.suppress(smtplib.SMTPException, OSError):
                    backend.close()  # connected but not logged in: not left to the GC
                raise
            self._backend = backend
            self.opened += 1
        try:
            self._backend.send_messages([message])
        except smtplib.SMTPException as exc:
            if dropped(exc):
                self.close()
            raise
        except OSError:
            self.close()  # a timeout or a reset mid-exchange: the session is unusable
            raise
        self._carried += 1
