"""The email channel tests' helpers: a channel pointed at a loopback SMTP server, and what a
received message holds. The servers themselves come from the `smtp_servers` fixture
(tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Sequence
from email.message import EmailMessage
from pathlib import Path
from typing import Optional

from clusterwatch.http_deadline import new_tls_context
from clusterwatch.loopback.smtp import SmtpServer
from clusterwatch.notify.email_channel import EmailChannel, EmailSettings
from clusterwatch.notify.smtp_exchange import SmtpSettings

USER = "clusterwatch"
# Recognisable, with a space and characters that base64 and quoting change: it must never
# be shown anywhere, in any form.
PASSWORD = "cw-SMTP-pw 8817/+=secret"
SENDER = "Pool watch <watch@example.org>"
RECIPIENTS = ("ops@example.org", "oncall@example.org")


def settings(server: SmtpServer, security: str = "none", *, username: str = "",
             timeout_s: float = 5.0, host: str = "127.0.0.1",
             recipients: Sequence[str] = RECIPIENTS) -> EmailSettings:
    return EmailSettings(
        smtp=SmtpSettings(host=host, port=server.port, security=security, username=username,
                          timeout_s=timeout_s),
        sender=SENDER, recipients=tuple(recipients))


def channel(server: SmtpServer, security: str = "none", *, ca: Optional[Path] = None,
            password: str = "", **options: object) -> EmailChannel:
    """An email channel to `server`; with `ca`, TLS trusts that CA alone."""
    context = new_tls_context(str(ca)) if ca is not None else None
    return EmailChannel("mail", settings(server, security, **options),  # type: ignore[arg-type]
                        password, context)


def text_of(message: EmailMessage) -> str:
    part = message.get_body(preferencelist=("plain",))
    assert part is not None
    return str(part.get_content()).replace("\r\n", "\n")  # parsed off the wire: CRLF


def html_of(message: EmailMessage) -> str:
    part = message.get_body(preferencelist=("html",))
    assert part is not None
    return str(part.get_content()).replace("\r\n", "\n")


def lines_of(message: EmailMessage) -> list[str]:
    """The event lines of a received message (its text body before the signature)."""
    return text_of(message).split("\n\n-- \n")[0].splitlines()
