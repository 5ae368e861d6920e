"""A real SMTP server on 127.0.0.1 for tests and demos: aiosmtpd, keeping what it accepts.

`with SmtpServer() as smtp:` starts aiosmtpd's Controller (a thread of this process) on a
free loopback port (the harness's supervisor's, again on another when it was taken);
`smtp.messages` are the accepted messages, parsed. It can require a
login (`login=(user, password)`, AUTH PLAIN/LOGIN without TLS, on loopback only), answer
DATA with an error for a while (`refuse(...)`), hold its answer to DATA until the test
releases it (`hold()`, `wait_held()`, `release()`: a send caught in flight), drop a session
between two messages (`drop_after(n)`), or go down and come back on the same port (`down()`,
`up()`), which is how the tests show that a failed send is retried, never lost.
`connections` counts the client sessions (each greeted with EHLO or HELO), so a test can see
how many connections a run opened.

`security="starttls"` offers STARTTLS and refuses mail (and logins) before it;
`security="tls"` speaks TLS from the first byte; both need `cert=(certificate, key)` (PEM
files). `secure` says, message by message, whether it came over TLS, `logins` who had logged
in. `refuse_rcpt(address, answer)` answers RCPT TO for one recipient with an error, and
`echo_auth=True` quotes what a failed login sent in the answer, as a careless server might
(the client must keep such an answer out of everything it shows).
aiosmtpd is a development dependency: without it the server raises MissingComponent.
"""

from __future__ import annotations

import asyncio
import email
import email.policy
import errno
import ssl
import threading
import time
from email.message import EmailMessage
from types import TracebackType
from typing import Any, Optional

from clusterwatch.loopback import supervisor
from clusterwatch.loopback.services import LOOPBACK, MissingComponent

SECURITY = ("none", "starttls", "tls")


class SmtpServer:
    def __init__(self, *, login: Optional[tuple[str, str]] = None, security: str = "none",
                 cert: Optional[tuple[str, str]] = None, echo_auth: bool = False) -> None:
        if security not in SECURITY:
            raise ValueError(f"security must be one of {', '.join(SECURITY)}")
        if (security != "none") != (cert is not None):
            raise ValueError("a certificate and key go with security starttls or tls, only")
        self.login = login
        self.security = security
        self.cert = cert
        self.echo_auth = echo_auth
        self.port = 0
        self.messages: list[EmailMessage] = []
        self.envelopes: list[tuple[str, list[str]]] = []  # (MAIL FROM, RCPT TOs)
        self.secure: list[bool] = []  # per message: it came over TLS
        self.logins: list[Optional[str]] = []  # per message: who had logged in
        self._rcpt_refusals: dict[str, str] = {}
        self.failed_logins = 0
        self.connections = 0
        self._drop_at: Optional[int] = None
        self._drop_answer: Optional[str] = None
        self._refusal: Optional[str] = None
        self._lock = threading.Lock()
        self._held_changed = threading.Condition(self._lock)
        self._holding = False
        self._hold_after = 0
        self._held: list[tuple[EmailMessage, threading.Event]] = []
        self._controller: Any = None

    def __enter__(self) -> SmtpServer:
        supervisor.on_free_ports(1, self._up_on)
        return self

    def _up_on(self, ports: supervisor.Ports) -> None:
        self.port = ports[0]
        try:
            self.up()
        except OSError as exc:  # another process took the port between the probe and the bind
            failed, self._controller = self._controller, None
            if failed is not None:
                failed.loop.close()  # its thread ended with the failed bind
            raise supervisor.ServiceStartError(
                "aiosmtpd", f"could not listen on {LOOPBACK}:{self.port}: {exc}",
                port_taken=exc.errno == errno.EADDRINUSE) from exc
        supervisor.count_start("aiosmtpd", ports)

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
            # A login before STARTTLS is refused, as real servers do; over implicit TLS or on
            # a plain loopback session it is taken (aiosmtpd counts only STARTTLS as TLS).
            options = {"authenticator": self._authenticate,
                       "auth_require_tls": self.security == "starttls"}
        if self.security == "starttls":
            options.update(tls_context=self._tls_context(), require_starttls=True)
        elif self.security == "tls":
            options["ssl_context"] = self._tls_context()
        self._controller = Controller(_Handler(self), hostname=LOOPBACK, port=self.port,
                                      **options)
        self._controller.start()

    def down(self) -> None:
        """Stop answering: connections are refused until `up()`."""
        self._drop_held()  # their sessions end with the controller: none outlives it
        if self._controller is not None:
            self._controller.stop()
            self._controller = None

    def _tls_context(self) -> ssl.SSLContext:
        assert self.cert is not None
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(*self.cert)
        return context

    def refuse_rcpt(self, address: str, answer: Optional[str]) -> None:
        """Answer RCPT TO:<address> with `answer` (e.g. "550 5.1.1 no such user"); None
        accepts it again. The other recipients are taken as before."""
        with self._lock:
            if answer is None:
                self._rcpt_refusals.pop(address.lower(), None)
            else:
                self._rcpt_refusals[address.lower()] = answer

    def refuse(self, answer: Optional[str]) -> None:
        """Answer DATA with `answer` (e.g. "451 4.3.0 try again later"); None accepts again."""
        self._refusal = answer

    def hold(self, after: int = 0) -> None:
        """From now on keep each message, then hold its answer to DATA until `release()`
        (`after`: the next `after` messages are answered at once, those after them held).

        A client is then in the middle of a send (its message taken, no "250" yet) for as
        long as the test needs, instead of for as long as a fixed wait lasts; `wait_held()`
        sees it there. Other sessions go on meanwhile; a refused DATA (`refuse()`) is
        answered at once. `down()` drops held answers.
        """
        with self._lock:
            self._holding = True
            self._hold_after = len(self.messages) + after

    def drop_after(self, count: int, answer: Optional[str] = None) -> None:
        """Once `count` messages in all are taken, the session that took the last of them
        is closed when its client starts another (MAIL FROM), once: answered with `answer`
        (e.g. "421 4.4.2 closing connection") or with nothing, as a server that times a
        session out or restarts does. Messages already taken are kept."""
        with self._lock:
            self._drop_at, self._drop_answer = count, answer

    def _dropping(self) -> bool:
        with self._lock:
            if self._drop_at is None or len(self.messages) < self._drop_at:
                return False
            self._drop_at = None
            return True

    def release(self) -> int:
        """Answer every held DATA and stop holding; return how many were held."""
        with self._lock:
            self._holding = False
            return self._open_held()

    def wait_held(self, count: int = 1, timeout: float = 60.0) -> list[EmailMessage]:
        """Block until `count` answers to DATA are held; return their messages, oldest first.
        `timeout` is a deadline for the failure message: TimeoutError says what was taken."""
        deadline = time.monotonic() + timeout
        with self._held_changed:
            while len(self._held) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"{len(self._held)} of {count} SMTP answers held within "
                                       f"{timeout:g} s; {len(self.messages)} messages taken")
                self._held_changed.wait(left)
            return [message for message, _gate in self._held]

    def wait_for(self, count: int, timeout: float = 10.0) -> list[EmailMessage]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if len(self.messages) >= count:
                    return list(self.messages)
            time.sleep(0.05)
        with self._lock:
            return list(self.messages)

    def _accept(self, mail_from: str, rcpt_tos: list[str], content: bytes,
                secure: bool = False, login: Optional[str] = None) -> str:
        if self._refusal is not None:
            return self._refusal
        parsed = email.message_from_bytes(content, policy=email.policy.default)
        with self._lock:
            self.envelopes.append((mail_from, list(rcpt_tos)))
            self.messages.append(parsed)
            self.secure.append(secure)
            self.logins.append(login)
        return "250 OK"

    def _rcpt_refusal(self, address: str) -> Optional[str]:
        with self._lock:
            return self._rcpt_refusals.get(address.lower())

    def _deliver(self, mail_from: str, rcpt_tos: list[str], content: bytes,
                 secure: bool = False,
                 login: Optional[str] = None) -> tuple[str, Optional[threading.Event]]:
        """The answer to DATA, and the gate it waits for while `hold()` is on."""
        taken = len(self.messages)
        answer = self._accept(mail_from, rcpt_tos, content, secure, login)
        with self._held_changed:
            if (not self._holding or len(self.messages) == taken  # not held: refused
                    or len(self.messages) <= self._hold_after):
                return answer, None
            # No other session runs between _accept and here (one event loop): ours is last.
            gate = threading.Event()
            self._held.append((self.messages[-1], gate))
            self._held_changed.notify_all()
        return answer, gate

    def _open_held(self) -> int:
        """With the lock held: let every held answer go."""
        held, self._held = self._held, []
        for _message, gate in held:
            gate.set()
        self._held_changed.notify_all()
        return len(held)

    def _drop_held(self) -> None:
        with self._lock:
            self._open_held()

    def _authenticate(self, _server: Any, _session: Any, _envelope: Any, mechanism: str,
                      auth_data: Any) -> Any:
        from aiosmtpd.smtp import AuthResult, LoginPassword

        if self.login is not None and isinstance(auth_data, LoginPassword):
            given = (auth_data.login.decode(), auth_data.password.decode())
            if given == self.login:
                return AuthResult(success=True, auth_data=auth_data)
        self.failed_logins += 1
        if self.echo_auth and isinstance(auth_data, LoginPassword):
            sent = f"{auth_data.login.decode()}:{auth_data.password.decode()}"
            return AuthResult(success=False, handled=False,
                              message=f"535 5.7.8 credentials {sent} invalid")
        return AuthResult(success=False, handled=False)


class _Handler:
    def __init__(self, server: SmtpServer) -> None:
        self._server = server

    async def handle_EHLO(self, _server: Any, session: Any, _envelope: Any, hostname: str,
                          responses: list[str]) -> list[str]:
        self._greeted(_server, session, hostname)
        return responses

    async def handle_HELO(self, _server: Any, session: Any, _envelope: Any,
                          hostname: str) -> str:
        self._greeted(_server, session, hostname)
        return f"250 {_server.hostname}"

    def _greeted(self, server: Any, session: Any, hostname: str) -> None:
        # A client greets once per connection, and again after STARTTLS (the connection it
        # already counted); the Controller's own readiness probe connects without greeting
        # and is not counted.
        session.host_name = hostname
        if getattr(server, "_original_transport", None) is not None:
            return  # the greeting after STARTTLS
        with self._server._lock:
            self._server.connections += 1

    async def handle_MAIL(self, server: Any, _session: Any, envelope: Any, address: str,
                          mail_options: list[str]) -> str:
        if self._server._dropping():
            answer = self._server._drop_answer
            if answer is not None:
                await server.push(answer)
            server.transport.abort()  # at once: nothing more reaches the client
            return answer or "421 4.4.2 closing connection"  # written nowhere
        envelope.mail_from = address
        envelope.mail_options.extend(mail_options)
        return "250 OK"

    async def handle_RCPT(self, _server: Any, _session: Any, envelope: Any, address: str,
                          rcpt_options: list[str]) -> str:
        refusal = self._server._rcpt_refusal(address)
        if refusal is not None:
            return refusal
        envelope.rcpt_tos.append(address)
        envelope.rcpt_options.extend(rcpt_options)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        content = envelope.original_content or envelope.content
        data = content if isinstance(content, bytes) else str(content).encode()
        secure = server.transport.get_extra_info("ssl_object") is not None
        login_bytes = getattr(session.auth_data, "login", None) if session.authenticated else None
        login = login_bytes.decode() if login_bytes else None
        answer, gate = self._server._deliver(envelope.mail_from, envelope.rcpt_tos, data,
                                             secure, login)
        while gate is not None and not gate.is_set():
            await asyncio.sleep(0.01)  # held: other sessions are served meanwhile
        return answer
