"""The HTTP server under `clusterwatch jobs serve`: a WSGI app behind limits that whatever
else reaches the port cannot wear down.

Prometheus sends one short GET and reads the answer. Port scanners, probes that give up
and hostile clients must cost neither a collection nor an unbounded resource:

- A request is answered only once its head is complete, up to the blank line that ends the
  headers. A client that closes before (a half-sent request) gets no answer, and the app
  (the collection) does not run for it.
- The head must arrive within REQUEST_TIMEOUT_S of the connection, whatever the pace of its
  bytes (one deadline for the whole head, not one per read, so a byte every few seconds
  does not keep a connection); sending the answer may wait REQUEST_TIMEOUT_S per write for
  a client that does not read. Past either, the connection is closed.
- At most MAX_CONNECTIONS connections are served at once, a thread each; a connection
  beyond is closed as soon as it is accepted (logged at most once a minute). Others wait in
  the kernel's listen backlog (LISTEN_BACKLOG) until accepted.
- One request per connection (HTTP/1.0, the connection closes after the answer): no idle
  keep-alive connection holds a thread.
"""

from __future__ import annotations

import io
import logging
import socket
import socketserver
import sys
import threading
import time
from typing import IO, Any, Optional, cast
from wsgiref.simple_server import ServerHandler, WSGIRequestHandler, WSGIServer

log = logging.getLogger(__name__)

REQUEST_TIMEOUT_S = 10.0  # Prometheus' default scrape timeout: a scrape slower is lost anyway
MAX_CONNECTIONS = 32  # a node has one or two scrapers; this leaves room for people and probes
LISTEN_BACKLOG = 64
MAX_REQUEST_LINE = 65536  # as wsgiref: longer request lines get 414
_REFUSAL_LOG_INTERVAL_S = 60.0


class _DeadlineReader(io.RawIOBase):
    """The socket's bytes, read with one deadline for all reads together."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        super().__init__()
        self._sock = sock
        self._deadline = deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        remaining = self._deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("the request did not arrive in time")
        self._sock.settimeout(remaining)
        return self._sock.recv_into(buffer)


class _HeadLines:
    """The request's lines for the header parser, noting whether the last one was the blank
    line that ends the head (http.client's parser takes the end of the stream as the end
    of the headers, which would answer a half-sent request)."""

    def __init__(self, rfile: io.BufferedIOBase) -> None:
        self._rfile = rfile
        self.complete = False

    def readline(self, limit: int = -1) -> bytes:
        line = self._rfile.readline(limit)
        self.complete = line in (b"\r\n", b"\n")
        return line


class _AppHandler(ServerHandler):
    """wsgiref's handler with its error reports sent to the log instead of stderr."""

    def log_exception(self, exc_info: Any) -> None:
        if isinstance(exc_info[1], (TimeoutError, ConnectionError)):
            log.debug("the client stopped reading the answer: %s", exc_info[1])
        else:
            path = getattr(self, "environ", {}).get("PATH_INFO")
            log.error("answering %s failed", path, exc_info=exc_info)


class RequestHandler(WSGIRequestHandler):
    """One request per connection, answered only when its head is complete and in time."""

    timeout = REQUEST_TIMEOUT_S  # the socket's timeout, for sending the answer

    def setup(self) -> None:
        super().setup()
        self.rfile.close()  # the plain reader: replaced by one with a deadline
        deadline = time.monotonic() + REQUEST_TIMEOUT_S
        self.rfile = io.BufferedReader(_DeadlineReader(self.connection, deadline))

    def handle(self) -> None:
        try:
            self.raw_requestline = self.rfile.readline(MAX_REQUEST_LINE + 1)
            if len(self.raw_requestline) > MAX_REQUEST_LINE:
                self.requestline = self.request_version = self.command = ""
                self.send_error(414)
                return
            if not self.parse_request():
                return
        except OSError as exc:  # TimeoutError, or the client reset the connection
            log.debug("%s: no complete request: %s", self.address_string(), exc)
            return
        self.connection.settimeout(self.timeout)
        handler = _AppHandler(self.rfile, cast(IO[bytes], self.wfile), sys.stderr,
                              self.get_environ(), multithread=True)
        handler.request_handler = self  # type: ignore[attr-defined]  # wsgiref logs through it
        handler.run(self.server.get_app())  # type: ignore[attr-defined]

    def parse_request(self) -> bool:
        """The request line and headers; False (and no answer) when the client closed
        before the blank line that ends them."""
        rfile = self.rfile
        head = _HeadLines(rfile)
        self.rfile = head  # type: ignore[assignment]  # http.client only calls readline
        try:
            parsed = super().parse_request()
        finally:
            self.rfile = rfile
        if parsed and not head.complete:
            log.debug("%s: the request ended before its headers did", self.address_string())
            return False
        return parsed

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s %s", self.address_string(), format % args)


class BoundedServer(socketserver.ThreadingMixIn, WSGIServer):
    """A threading WSGI server with at most MAX_CONNECTIONS connections served at once."""

    daemon_threads = True
    block_on_close = False  # a stop must not wait for slow clients' timeouts
    request_queue_size = LISTEN_BACKLOG
    max_connections = MAX_CONNECTIONS

    def __init__(self, server_address: tuple[str, int], handler_class: Any,
                 bind_and_activate: bool = True) -> None:
        self._slots = threading.BoundedSemaphore(self.max_connections)
        self._refusals_logged_at: Optional[float] = None
        super().__init__(server_address, handler_class, bind_and_activate)

    def server_bind(self) -> None:
        # HTTPServer.server_bind looks the address up with getfqdn(), a DNS query that can
        # hang a node's exporter at boot; the name only fills SERVER_NAME.
        socketserver.TCPServer.server_bind(self)
        self.server_name = str(self.server_address[0])
        self.server_port = int(self.server_address[1])
        self.setup_environ()

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            self._log_refusal()
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()  # no thread started: it would never give the slot back
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        log.error("serving %s failed", client_address, exc_info=True)

    def _log_refusal(self) -> None:
        now = time.monotonic()
        last = self._refusals_logged_at
        if last is None or now - last >= _REFUSAL_LOG_INTERVAL_S:
            self._refusals_logged_at = now
            log.warning("%d connections are being served: closing new ones (logged at most "
                        "once a minute)", self.max_connections)


class BoundedServer6(BoundedServer):
    address_family = socket.AF_INET6
