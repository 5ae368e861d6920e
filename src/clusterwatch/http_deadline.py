"""Connections whose every socket call ends by one deadline for the whole exchange (HTTP, SMTP).

A socket timeout bounds each blocking call on its own: a server that sends one byte a
second never lets a read wait 2 s, so a "2 s" request can last as long as the server likes.
Here each call first sets the socket's timeout to the time left until the deadline, so the
connection, the TLS handshake, sending the request and every read of the answer end together
by it. Name resolution (getaddrinfo) is the one step outside it: the resolver has no timeout
to set.
"""

from __future__ import annotations

import functools
import http.client
import socket
import ssl
import time
from typing import Any, Optional


class Deadline:
    """A point on the monotonic clock; `left()` raises socket.timeout once it has passed."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._end = time.monotonic() + seconds

    def left(self) -> float:
        left = self._end - time.monotonic()
        if left <= 0:
            raise socket.timeout(f"no answer within {self.seconds:g} s")
        return left


class _DeadlineCalls(socket.socket):
    """Socket calls that block no longer than the deadline allows (none set: plain socket)."""

    deadline: Optional[Deadline] = None

    def _arm(self) -> None:
        if self.deadline is not None:
            self.settimeout(self.deadline.left())

    def connect(self, *args: Any, **kwargs: Any) -> None:
        self._arm()
        super().connect(*args, **kwargs)

    def recv(self, *args: Any, **kwargs: Any) -> bytes:
        self._arm()
        return super().recv(*args, **kwargs)

    def recv_into(self, *args: Any, **kwargs: Any) -> int:
        # What http.client's buffered reader calls for the status line, headers and body.
        self._arm()
        return super().recv_into(*args, **kwargs)

    def send(self, *args: Any, **kwargs: Any) -> int:
        self._arm()
        return super().send(*args, **kwargs)

    def sendall(self, *args: Any, **kwargs: Any) -> None:
        # One call, one timeout: CPython bounds a whole sendall by the socket's timeout.
        self._arm()
        super().sendall(*args, **kwargs)


class _DeadlineSSLSocket(_DeadlineCalls, ssl.SSLSocket):
    """The TLS socket: its reads and writes go through the calls above as well."""


def new_tls_context(ca_file: Optional[str] = None) -> ssl.SSLContext:
    """A verifying client context whose sockets keep the deadline: it trusts the system's
    CAs, or with `ca_file` that file's alone (a private CA). Raises OSError or ssl.SSLError
    for a CA file that cannot be read or holds no certificate."""
    context = ssl.create_default_context(cafile=ca_file)
    context.sslsocket_class = _DeadlineSSLSocket
    return context


def wrap_tls(context: ssl.SSLContext, raw: socket.socket, host: str,
             deadline: Deadline) -> ssl.SSLSocket:
    """`raw` after a TLS handshake with `host` (verified as `context` says), both the
    handshake and every later call ending by `deadline`. `context` is new_tls_context's."""
    raw.settimeout(deadline.left())  # the handshake: one call, one timeout
    tls = context.wrap_socket(raw, server_hostname=host)
    assert isinstance(tls, _DeadlineSSLSocket)
    tls.deadline = deadline
    return tls


# Built once per process: loading the system's CA certificates is the slow part.
_tls_context = functools.lru_cache(maxsize=1)(new_tls_context)


def open_socket(host: str, port: int, deadline: Deadline) -> socket.socket:
    """Connect to the first address of `host` that answers, all attempts within `deadline`."""
    error: Optional[OSError] = None
    for family, kind, proto, _, address in socket.getaddrinfo(host, port,
                                                              type=socket.SOCK_STREAM):
        sock = _DeadlineCalls(family, kind, proto)
        sock.deadline = deadline
        try:
            sock.connect(address)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return sock
        except socket.timeout:
            sock.close()
            raise  # the deadline has passed: no time for another address
        except OSError as exc:
            sock.close()
            error = exc
    raise error if error is not None else OSError(f"no address for {host}")


class DeadlineHTTPConnection(http.client.HTTPConnection):
    def __init__(self, host: str, port: int, deadline: Deadline) -> None:
        super().__init__(host, port, timeout=deadline.seconds)
        self.deadline = deadline

    def connect(self) -> None:
        self.sock = open_socket(self.host, self.port, self.deadline)


class DeadlineHTTPSConnection(http.client.HTTPSConnection):
    def __init__(self, host: str, port: int, deadline: Deadline) -> None:
        super().__init__(host, port, timeout=deadline.seconds, context=_tls_context())
        self.deadline = deadline

    def connect(self) -> None:
        raw = open_socket(self.host, self.port, self.deadline)
        self.sock = wrap_tls(_tls_context(), raw, self.host, self.deadline)
