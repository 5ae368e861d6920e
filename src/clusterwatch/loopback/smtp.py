"""A real SMTP server on 127.0.0.1 for tests and demos: aiosmtpd, keeping what it accepts.

`with SmtpServer() as smtp:` starts aiosmtpd's Controller (a thread of this process) on a
free loopback port; `smtp.messages` are the accepted messages, parsed. It can require a
login (`login=(user, password)`, AUTH PLAIN/LOGIN without TLS, on loopback only), answer
DATA with an error for a while (`refuse(...)`), or go down and come back on the same port
(`down()`, `up()`), which is how the tests show that a failed send is retried, never lost.
aiosmtpd is a development dependency: without it the server raises MissingComponent.
"""

from __future__ import annotations

import email
import email.policy
import threading
import time
from email.message import EmailMessage
from types import TracebackType
from typing import Any, Optional

from clusterwatch.loopback.services import LOOPBACK, MissingComponent, free_port

PORT_ATTEMPTS = 3


class SmtpServer:
    def __init__(self, *, login: Optional[tuple[str, str]] = None) -> None:
        self.login = login
        self.port = 0
        self.messages: list[EmailMessage] = []
        self.envelopes: list[tuple[str, list[str]]] = []  # (MAIL FROM, RCPT TOs)
        self.failed_logins = 0
        self._refusal: Optional[str] = None
        self._lock = threading.Lock()
        self._controller: Any = None

    def __enter__(self) -> SmtpServer:
        for _attempt in range(PORT_ATTEMPTS):
            self.port = free_port()
            try:
                self.up()
                return self
            except OSError:  # another process took the port between the probe and the bind
                continue
        raise OSError(f"aiosmtpd could not bind a loopback port in {PORT_ATTEMPTS} attempts")

    def __exit__(self, kind: Optional[type[BaseException]], value: Optional[BaseException],
                 traceback: Optional[TracebackType]) -> None:
        self.down()

    def up(self) -> None:
        """Start (again) on `self.port`."""
        try:
            from aiosmtpd.controller import Controller
        except ImportError:
            raise MissingComponent("aiosmtpd", "pip install aiosmtpd (a development "
                                               "dependency of clusterwatch)") from None
        options: dict[str, Any] = {}
        if self.login is not None:
            options = {"authenticator": self._authenticate, "auth_require_tls": False}
        self._controller = Controller(_Handler(self), hostname=LOOPBACK, port=self.port,
                                      **options)
        self._controller.start()

    def down(self) -> None:
        """Stop answering: connections are refused until `up()`."""
        if self._controller is not None:
            self._controller.stop()
            self._controller = None

    def refuse(self, answer: Optional[str]) -> None:
        """Answer DATA with `answer` (e.g. "451 4.3.0 try again later"); None accepts again."""
        self._refusal = answer

    def wait_for(self, count: int, timeout: float = 10.0) -> list[EmailMessage]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if len(self.messages) >= count:
                    return list(self.messages)
            time.sleep(0.05)
        with self._lock:
            return list(self.messages)

    def _accept(self, mail_from: str, rcpt_tos: list[str], content: bytes) -> str:
        if self._refusal is not None:
            return self._refusal
        parsed = email.message_from_bytes(content, policy=email.policy.default)
        with self._lock:
            self.envelopes.append((mail_from, list(rcpt_tos)))
            self.messages.append(parsed)
        return "250 OK"

    def _authenticate(self, _server: Any, _session: Any, _envelope: Any, mechanism: str,
                      auth_data: Any) -> Any:
        from aiosmtpd.smtp import AuthResult, LoginPassword

        if self.login is not None and isinstance(auth_data, LoginPassword):
            given = (auth_data.login.decode(), auth_data.password.decode())
            if given == self.login:
                return AuthResult(success=True)
        self.failed_logins += 1
        return AuthResult(success=False, handled=False)


class _Handler:
    def __init__(self, server: SmtpServer) -> None:
        self._server = server

    async def handle_DATA(self, _server: Any, _session: Any, envelope: Any) -> str:
        content = envelope.original_content or envelope.content
        data = content if isinstance(content, bytes) else str(content).encode()
        return self._server._accept(envelope.mail_from, envelope.rcpt_tos, data)
