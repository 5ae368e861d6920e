"""One SMTP exchange within one deadline, and what the server's replies mean for the batch.

The whole exchange (connecting, the greeting, EHLO, STARTTLS or TLS from the first byte,
the login, MAIL, RCPT, DATA) ends by `timeout_s`: every socket call waits only for the time
left (`clusterwatch.http_deadline`), so a server that answers a byte at a time is stopped
as a silent one is. Name resolution is the one step outside it, as for HTTP.

What a reply means, wherever in the exchange it comes:

- 2xx/3xx where expected: go on; 250 to the end of DATA delivers the batch.
- 4xx (a greeting of 421, greylisting, "mailbox busy", a temporary login failure 454):
  RETRY, error `smtp_<code>`, the reply kept with it.
- 5xx (a refused sender, all recipients refused, a refused message, a wrong password 535):
  REJECTED, the batch becomes dead letters, the reply kept where the status views show them.
- Recipients answered differently: any 4xx, and the message is not sent to anyone this time
  (RSET, RETRY: it goes to all of them together later, never twice to some); only 5xx among
  accepted ones, and it is sent to the accepted ones and DELIVERED, the refusal recorded as
  the channel's last error (a recipient refused for good will not take the message later).
- No reply: `refused` (nothing listens), `timeout`, `tls` (a handshake or certificate
  failure), `disconnected` (the server closed the session), `connection` (any other socket
  error): RETRY.
- The server lacks what the settings require (STARTTLS, AUTH): REJECTED, since resending
  cannot change it; mail is never sent in clear or without the login instead.

A reply is kept as one line of printable text, at most REPLY_LIMIT characters, with the
password and its base64 forms (what AUTH PLAIN and LOGIN send) cut out: a careless server may
quote what it was sent.
"""

from __future__ import annotations

import base64
import contextlib
import re
import smtplib
import socket
import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Optional, Union

from clusterwatch.http_deadline import Deadline, open_socket, wrap_tls
from clusterwatch.notify import channel as ch

SECURITY_MODES = ("starttls", "tls", "none")
DEFAULT_PORTS = {"starttls": 587, "tls": 465, "none": 25}
REDACTED = "[redacted]"
_HOST_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?")


@dataclass(frozen=True)
class SmtpSettings:
    host: str
    port: int
    security: str  # one of SECURITY_MODES
    username: str = ""  # "" : no login
    timeout_s: float = 10.0


@dataclass(frozen=True)
class Envelope:
    sender: str  # the address alone (MAIL FROM)
    recipients: tuple[str, ...]  # the addresses alone (RCPT TO), in order


class _Refusal(Exception):
    """A reply that ends the exchange: `result` is what it means for the batch."""

    def __init__(self, result: ch.SendResult) -> None:
        super().__init__(result.error)
        self.result = result


class _DeadlineSMTP(smtplib.SMTP):
    """smtplib's client on a socket whose every call ends by the deadline."""

    def __init__(self, host: str, deadline: Deadline, context: Optional[ssl.SSLContext],
                 implicit_tls: bool) -> None:
        super().__init__(local_hostname=_local_name(), timeout=deadline.seconds)
        self._host = host  # smtplib names the server to TLS by it (server_hostname)
        self._deadline = deadline
        self._context = context
        self._implicit_tls = implicit_tls

    def _get_socket(self, host: str, port: int, timeout: Any) -> socket.socket:
        raw = open_socket(host, port, self._deadline)
        if self._implicit_tls:
            assert self._context is not None
            return wrap_tls(self._context, raw, host, self._deadline)
        return raw

    def starttls_within_deadline(self) -> None:
        """STARTTLS, the handshake ending by the deadline; what EHLO said is forgotten
        (RFC 3207 4.2), so the caller greets again."""
        assert self._context is not None
        if not self.has_extn("starttls"):
            raise _Refusal(ch.SendResult(ch.REJECTED, "smtp_no_starttls",
                                         reply="the server does not offer STARTTLS"))
        code, reply = self.docmd("STARTTLS")
        if code != 220:
            raise smtplib.SMTPResponseException(code, reply)
        assert self.sock is not None
        self.sock = wrap_tls(self._context, self.sock, self._host, self._deadline)
        self.file = None
        self.helo_resp = self.ehlo_resp = None
        self.esmtp_features = {}
        self.does_esmtp = False


def send_message(settings: SmtpSettings, password: str, context: Optional[ssl.SSLContext],
                 envelope: Envelope, message: bytes) -> ch.SendResult:
    """Deliver `message` (CRLF line ends, ready for DATA) in one exchange; never raises.

    `context` verifies the server for tls and starttls (clusterwatch.http_deadline's
    new_tls_context); with security "none" it is unused.
    """
    secrets = secret_forms(settings.username, password)
    deadline = Deadline(settings.timeout_s)
    client = _DeadlineSMTP(settings.host, deadline, context, settings.security == "tls")
    try:
        return _exchange(client, settings, password, envelope, message, deadline, secrets)
    except _Refusal as refusal:
        return refusal.result
    except smtplib.SMTPResponseException as exc:
        return reading(exc.smtp_code, exc.smtp_error, secrets)
    except smtplib.SMTPServerDisconnected as exc:
        return _no_reply(exc.__context__, secrets)  # smtplib wraps the socket's error
    except smtplib.SMTPNotSupportedError:
        return ch.SendResult(ch.REJECTED, "smtp_no_auth",
                             reply="the server does not offer AUTH")
    except smtplib.SMTPException as exc:
        # Left: smtplib's own words, e.g. "No suitable authentication method found."
        return ch.SendResult(ch.REJECTED, "smtp_no_auth", reply=clean(str(exc), secrets))
    except OSError as exc:  # connecting, or the TLS handshake
        return _no_reply(exc, secrets)
    finally:
        _close(client)


def _no_reply(exc: Optional[BaseException], secrets: Sequence[str]) -> ch.SendResult:
    """What a socket's failure means: the batch stays queued, the error says which."""
    if isinstance(exc, socket.timeout):
        return ch.SendResult(ch.RETRY, "timeout")
    if isinstance(exc, ssl.SSLError):
        return ch.SendResult(ch.RETRY, "tls", reply=clean(_tls_words(exc), secrets))
    if isinstance(exc, ConnectionRefusedError):
        return ch.SendResult(ch.RETRY, "refused")
    if exc is None or isinstance(exc, (ConnectionResetError, ConnectionAbortedError,
                                       BrokenPipeError)):
        return ch.SendResult(ch.RETRY, "disconnected")  # the server closed the session
    return ch.SendResult(ch.RETRY, "connection", reply=type(exc).__name__)


def _exchange(client: _DeadlineSMTP, settings: SmtpSettings, password: str,
              envelope: Envelope, message: bytes, deadline: Deadline,
              secrets: Sequence[str]) -> ch.SendResult:
    code, reply = client.connect(settings.host, settings.port)
    if code != 220:
        raise smtplib.SMTPConnectError(code, reply)
    client.ehlo_or_helo_if_needed()
    if settings.security == "starttls":
        deadline.left()
        client.starttls_within_deadline()
        client.ehlo_or_helo_if_needed()
    if settings.username:
        deadline.left()
        client.login(settings.username, password)
    deadline.left()
    code, reply = client.mail(envelope.sender)
    if code != 250:
        raise smtplib.SMTPSenderRefused(code, reply, envelope.sender)
    accepted, refused = [], []
    for recipient in envelope.recipients:
        code, reply = client.rcpt(recipient)
        if code in (250, 251):
            accepted.append(recipient)
        else:
            refused.append((recipient, code, reply))
    temporary = [item for item in refused if not 500 <= item[1] < 600]
    if temporary or not accepted:
        recipient, code, reply = (temporary or refused)[0]
        with contextlib.suppress(smtplib.SMTPException, OSError):
            client.rset()  # nobody gets it now: all of them get it together later
        result = reading(code, reply, secrets)
        return ch.SendResult(result.outcome, result.error, reply=_naming(recipient, result))
    deadline.left()
    code, reply = client.data(message)
    if code != 250:
        raise smtplib.SMTPDataError(code, reply)
    if refused:
        recipient, code, reply = refused[0]
        result = reading(code, reply, secrets)
        more = f" (and {len(refused) - 1} more)" if len(refused) > 1 else ""
        return ch.SendResult(ch.DELIVERED, result.error,
                             reply=_naming(recipient, result, more))
    return ch.SendResult(ch.DELIVERED)


def reading(code: int, reply: Union[bytes, str], secrets: Sequence[str] = ()) -> ch.SendResult:
    """What a refusing reply means: 5xx for good, anything else (4xx, nonsense) for now."""
    text = clean(reply, secrets)
    said = text if text.startswith(str(code)) else f"{code} {text}".strip()
    if 500 <= code < 600:
        return ch.SendResult(ch.REJECTED, f"smtp_{code}", reply=said)
    if 400 <= code < 500:
        return ch.SendResult(ch.RETRY, f"smtp_{code}", reply=said)
    # smtplib says -1 for a reply it could not read; a 2xx or 3xx out of place is no better.
    return ch.SendResult(ch.RETRY, "smtp_unexpected", reply=clean(reply, secrets) or None)


def clean(reply: Union[bytes, str], secrets: Sequence[str] = ()) -> str:
    """`reply` as one line of printable text, at most REPLY_LIMIT characters, no secret in it."""
    text = reply.decode("utf-8", "replace") if isinstance(reply, bytes) else reply
    text = _redact(text, secrets)  # before the spaces change: a password may hold some
    text = "".join(c if c.isprintable() else " " for c in text)
    text = _redact(" ".join(text.split()), secrets)
    if len(text) > ch.REPLY_LIMIT:
        text = text[: ch.REPLY_LIMIT - 3] + "..."
    return text


def secret_forms(username: str, password: str) -> list[str]:
    """The password and what a login sends of it (AUTH PLAIN, AUTH LOGIN), longest first."""
    if not password:
        return []
    forms = {password}
    for raw in (password, f"\0{username}\0{password}", f"{username}\0{username}\0{password}"):
        encoded = base64.b64encode(raw.encode("utf-8")).decode("ascii")
        forms.update({encoded, encoded.rstrip("=")})
    return sorted(forms, key=len, reverse=True)


def _redact(text: str, secrets: Sequence[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, REDACTED)
    return text


def _naming(recipient: str, result: ch.SendResult, more: str = "") -> str:
    return f"<{recipient}>{more}: {result.reply}"


def _tls_words(exc: ssl.SSLError) -> str:
    # A verification failure says why (expired, unknown issuer, wrong host name).
    verify = getattr(exc, "verify_message", None)
    return str(verify) if verify else (exc.reason or type(exc).__name__)


def _local_name() -> str:
    """This host's name for EHLO: socket.getfqdn(), smtplib's choice, may wait on DNS
    outside any deadline."""
    name = socket.gethostname()
    return name if _HOST_NAME.fullmatch(name) else "localhost"


def _close(client: _DeadlineSMTP) -> None:
    """QUIT when the session is still up (within what is left of the deadline), then close."""
    if client.sock is not None:
        with contextlib.suppress(smtplib.SMTPException, OSError):
            client.quit()
    client.close()
