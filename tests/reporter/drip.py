"""Loopback peers that answer one byte at a time: each read the client makes gets a byte well
within any per-read timeout, so only a deadline on the whole exchange stops the client.

`DripServer` reads a whole HTTP request, then sends its answer one byte per `interval` (over
TLS, given a certificate: one byte per TLS record, so even a TLS read of one whole record
gets its bytes in time).
`DripRelay` sits in front of a real server: what the client sends goes through at once,
what the server sends comes back one byte per `interval` (so a TLS handshake drips too).
Both give up after `max_seconds`, so a client without a deadline still ends its test.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
import time
from typing import Optional

from tests.support.tls import ServerCert

ANSWER = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
          b"Content-Length: 12\r\nConnection: close\r\n\r\n{\"ok\": true}")


class _Peer:
    def __init__(self, interval: float, max_seconds: float) -> None:
        self.interval = interval
        self.max_seconds = max_seconds
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.connections = 0
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> _Peer:
        self._spawn(self._accept)
        return self

    def close(self) -> None:
        self._stop.set()
        with contextlib.suppress(OSError):
            self.listener.close()
        for thread in self._threads:
            thread.join(5)

    def __enter__(self) -> _Peer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _spawn(self, target: object, *args: object) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)  # type: ignore[arg-type]
        thread.start()
        self._threads.append(thread)

    def _accept(self) -> None:
        self.listener.settimeout(0.1)
        while not self._stop.is_set():
            try:
                client, _ = self.listener.accept()
            except (socket.timeout, OSError):
                continue
            self.connections += 1
            self._spawn(self._serve, client)

    def _drip(self, data: bytes, to: socket.socket, until: float) -> bool:
        """Send `data` a byte at a time; False once the peer went away or time is up."""
        for byte in data:
            if self._stop.is_set() or time.monotonic() > until:
                return False
            try:
                to.sendall(bytes([byte]))
            except OSError:
                return False
            self._stop.wait(self.interval)
        return True

    def _serve(self, client: socket.socket) -> None:
        raise NotImplementedError


class DripServer(_Peer):
    """HTTP (HTTPS with `cert`) on loopback whose answer arrives one byte per `interval`."""

    def __init__(self, answer: bytes = ANSWER, interval: float = 1.0,
                 max_seconds: float = 60.0, cert: Optional[ServerCert] = None) -> None:
        super().__init__(interval, max_seconds)
        self.answer = answer
        self.context: Optional[ssl.SSLContext] = None
        if cert is not None:
            self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self.context.load_cert_chain(str(cert.cert), str(cert.key))
        scheme = "http" if cert is None else "https"
        self.url = f"{scheme}://127.0.0.1:{self.port}/api/host-reports/testhost/"

    def _serve(self, client: socket.socket) -> None:
        until = time.monotonic() + self.max_seconds
        client.settimeout(5)
        if self.context is not None:
            try:
                client = self.context.wrap_socket(client, server_side=True)
            except OSError:
                client.close()
                return
        with client:
            request = b""
            with contextlib.suppress(OSError):
                while b"\r\n\r\n" not in request:
                    part = client.recv(65536)
                    if not part:
                        return
                    request += part
                head, _, body = request.partition(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                while len(body) < length:
                    part = client.recv(65536)
                    if not part:
                        return
                    body += part
            self._drip(self.answer, client, until)


class DripRelay(_Peer):
    """A TCP relay to `upstream` (host, port) that slows only the server's side."""

    def __init__(self, upstream: tuple[str, int], interval: float = 1.0,
                 max_seconds: float = 60.0) -> None:
        super().__init__(interval, max_seconds)
        self.upstream = upstream

    def url(self, path: str = "/api/host-reports/testhost/", scheme: str = "https") -> str:
        return f"{scheme}://127.0.0.1:{self.port}{path}"

    def _serve(self, client: socket.socket) -> None:
        until = time.monotonic() + self.max_seconds
        try:
            server = socket.create_connection(self.upstream, timeout=5)
        except OSError:
            client.close()
            return
        self._spawn(self._forward, client, server)
        try:
            while not self._stop.is_set() and time.monotonic() < until:
                try:
                    data = server.recv(65536)
                except socket.timeout:
                    continue
                if not data or not self._drip(data, client, until):
                    break
        except OSError:
            pass
        finally:
            client.close()
            server.close()

    def _forward(self, client: socket.socket, server: socket.socket) -> None:
        client.settimeout(0.2)
        while not self._stop.is_set():
            try:
                data: Optional[bytes] = client.recv(65536)
            except socket.timeout:
                continue
            except OSError:
                return
            if not data:
                return
            try:
                server.sendall(data)
            except OSError:
                return
