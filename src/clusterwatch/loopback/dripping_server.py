"""A loopback HTTP server that sends its answer one byte at a time.

It plays a server that is alive but slow on purpose (or broken): every read of its answer
returns within a second, so a client timeout that bounds each read never trips, and the
whole answer takes `len(answer) * interval` seconds. Deadline tests point a client at it and
measure how long the client waits.
"""

from __future__ import annotations

import socket
import socketserver
import ssl
import threading
from collections.abc import Mapping
from typing import Any, Optional, cast

LOOPBACK = "127.0.0.1"
MAX_REQUEST_BYTES = 1024 * 1024


class DrippingServer:
    """Answers every request with `status`, `headers` and `body`, one byte per `interval` s.

    Use as a context manager; `requests` counts the requests whose head arrived. Stopping
    the server ends the drips and closes their connections.
    """

    def __init__(
        self,
        body: bytes = b"ok",
        status: int = 200,
        headers: Optional[Mapping[str, str]] = None,
        interval: float = 1.0,
        tls: Optional[ssl.SSLContext] = None,
    ) -> None:
        head = [f"HTTP/1.1 {status} Dripping", f"Content-Length: {len(body)}",
                "Connection: close"]
        head += [f"{name}: {value}" for name, value in (headers or {}).items()]
        self.answer = ("\r\n".join(head) + "\r\n\r\n").encode() + body
        self.interval = interval
        self.tls = tls  # a server context: speak HTTPS
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._requests = 0
        self._server: Optional[_Server] = None
        self._thread: Optional[threading.Thread] = None

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("server not started")
        scheme = "https" if self.tls is not None else "http"
        return f"{scheme}://{LOOPBACK}:{self._server.server_address[1]}"

    @property
    def requests(self) -> int:
        with self._lock:
            return self._requests

    def count_request(self) -> None:
        with self._lock:
            self._requests += 1

    def start(self) -> DrippingServer:
        self.stopping.clear()
        self._server = _Server((LOOPBACK, 0), _Handler, self)
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True,
                                        name="DrippingServer")
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        self.stopping.set()
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join()
        self._server = self._thread = None

    def __enter__(self) -> DrippingServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], handler: type[socketserver.BaseRequestHandler],
                 owner: DrippingServer) -> None:
        self.owner = owner
        super().__init__(address, handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that gave up mid-drip is the expected outcome, not an error


class _Handler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        owner = cast(_Server, self.server).owner
        sock: socket.socket = self.request
        if owner.tls is not None:
            sock = owner.tls.wrap_socket(sock, server_side=True)
        if not _read_request(sock):
            return
        owner.count_request()
        if owner.interval <= 0:
            sock.sendall(owner.answer)  # a prompt server, for comparison
            return
        for index in range(len(owner.answer)):
            sock.sendall(owner.answer[index:index + 1])
            if owner.stopping.wait(owner.interval):
                return


def _read_request(sock: socket.socket) -> bool:
    """Read the request's head and its Content-Length body; False if the client left."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk or len(data) > MAX_REQUEST_BYTES:
            return False
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip() or b"0")
    while len(body) < min(length, MAX_REQUEST_BYTES):
        chunk = sock.recv(65536)
        if not chunk:
            return False
        body += chunk
    return True
