"""`/metrics` over HTTP until SIGTERM or SIGINT, computed at scrape time.

A WSGI app in a threading wsgiref server that answers like prometheus_client's
`make_wsgi_app` (the same content negotiation on `Accept`, gzip on `Accept-Encoding`,
OPTIONS, 405 for other methods, `name[]` filters): the Prometheus text format and
OpenMetrics 1.0.0 are written by `exposition.render`, anything else (another format
version or name escaping, a `name[]` filter) by prometheus_client itself. The collector
serialises concurrent scrapes itself.
"""

from __future__ import annotations

import gzip
import logging
import signal
import socket
import socketserver
import threading
from collections.abc import Iterable
from types import FrameType
from typing import TYPE_CHECKING, Any, Callable, Optional
from urllib.parse import parse_qs
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.exposition import choose_encoder, gzip_accepted

from clusterwatch.jobs import exposition

if TYPE_CHECKING:
    from clusterwatch.jobs.exporter import JobsCollector

WSGIEnvironment = dict[str, Any]
StartResponse = Callable[..., Any]
WSGIApp = Callable[[WSGIEnvironment, StartResponse], Iterable[bytes]]

log = logging.getLogger(__name__)

DEFAULT_PORT = 9306


def parse_listen(text: str) -> tuple[str, int]:
    """`HOST:PORT`, `:PORT` (every IPv4 address) or `[IPv6]:PORT` -> (host, port)."""
    host, sep, port_text = text.rpartition(":")
    if not sep or not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ValueError(f"expected HOST:PORT, :PORT or [IPV6]:PORT, got {text!r}")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise ValueError(f"write an IPv6 address in brackets, e.g. [::1]:9306, not {text!r}")
    return host, int(port_text)


class _Server(socketserver.ThreadingMixIn, WSGIServer):
    daemon_threads = True

    def server_bind(self) -> None:
        # HTTPServer.server_bind looks the address up with getfqdn(), a DNS query that can
        # hang a node's exporter at boot; the name only fills SERVER_NAME.
        socketserver.TCPServer.server_bind(self)
        self.server_name = str(self.server_address[0])
        self.server_port = int(self.server_address[1])
        self.setup_environ()


class _Server6(_Server):
    address_family = socket.AF_INET6


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s %s", self.address_string(), format % args)


def metrics_app(collector: JobsCollector) -> WSGIApp:
    """The WSGI app serving `collector` (see the module's docstring)."""
    registry = CollectorRegistry()
    registry.register(collector)
    fallback: WSGIApp = make_wsgi_app(registry)

    def app(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        if (environ["REQUEST_METHOD"] != "GET" or environ.get("PATH_INFO") == "/favicon.ico"
                or "name[]" in parse_qs(environ.get("QUERY_STRING", ""))):
            return fallback(environ, start_response)
        encoder, content_type = choose_encoder(environ.get("HTTP_ACCEPT", ""))
        fmt = exposition.format_of(encoder)
        if fmt is None:
            return fallback(environ, start_response)
        output = collector.exposition(fmt)
        headers = [("Content-Type", content_type)]
        if gzip_accepted(environ.get("HTTP_ACCEPT_ENCODING", "")):
            output = gzip.compress(output)
            headers.append(("Content-Encoding", "gzip"))
        start_response("200 OK", headers)
        return [output]

    return app


def bind(collector: JobsCollector, host: str, port: int) -> WSGIServer:
    """A server bound to host:port (OSError when the address is in use or unknown)."""
    server_class = _Server6 if ":" in host else _Server
    return make_server(host, port, metrics_app(collector), server_class, _QuietHandler)


def serve_until_signalled(server: WSGIServer) -> None:
    """Serve until SIGTERM or SIGINT, then close the socket and return."""

    def stop(signum: int, _frame: Optional[FrameType]) -> None:
        log.info("%s received, stopping", signal.Signals(signum).name)
        # shutdown() waits for serve_forever() to return, which runs in this (main) thread.
        threading.Thread(target=server.shutdown, daemon=True).start()

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        server.serve_forever(poll_interval=0.5)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        server.server_close()
