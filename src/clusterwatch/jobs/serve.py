"""`/metrics` over HTTP until SIGTERM or SIGINT, computed at scrape time.

A WSGI app, in the bounded server of `http_server`, that answers like prometheus_client's
`make_wsgi_app` (the same content negotiation on `Accept`, OPTIONS, 405 for other methods,
`name[]` filters): the Prometheus text format and OpenMetrics 1.0.0 are written by
`exposition.render`, anything else (another format version or name escaping, a `name[]`
filter) by prometheus_client itself. Compression is decided here for both, with the
q-values of `Accept-Encoding` honoured (`gzip;q=0` refuses gzip), which prometheus_client
ignores. The collector shares one collection between concurrent scrapes itself.
"""

from __future__ import annotations

import gzip
import logging
import signal
import threading
from collections.abc import Iterable
from types import FrameType
from typing import TYPE_CHECKING, Any, Callable, Optional
from urllib.parse import parse_qs
from wsgiref.simple_server import WSGIServer, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.exposition import choose_encoder

from clusterwatch.jobs import exposition, http_server

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


def gzip_wanted(accept_encoding: str) -> bool:
    """Whether `Accept-Encoding` asks for gzip: listed (or `x-gzip`) with a q-value above 0
    (RFC 9110, 12.5.3: `q=0` means not acceptable). A bad q-value counts as 0."""
    wanted = False
    for item in accept_encoding.split(","):
        coding, _, parameters = item.partition(";")
        if coding.strip().lower() not in ("gzip", "x-gzip"):
            continue
        quality = 1.0
        for parameter in parameters.split(";"):
            name, _, value = parameter.partition("=")
            if name.strip().lower() == "q":
                try:
                    quality = float(value.strip())
                except ValueError:
                    quality = 0.0
        wanted = quality > 0  # the last mention wins, as the header's parsers do
    return wanted


def metrics_app(collector: JobsCollector) -> WSGIApp:
    """The WSGI app serving `collector` (see the module's docstring)."""
    registry = CollectorRegistry()
    registry.register(collector)
    fallback: WSGIApp = make_wsgi_app(registry)

    def app(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        compress = gzip_wanted(environ.get("HTTP_ACCEPT_ENCODING", ""))
        if (environ["REQUEST_METHOD"] != "GET" or environ.get("PATH_INFO") == "/favicon.ico"
                or "name[]" in parse_qs(environ.get("QUERY_STRING", ""))):
            return fallback(_encoding_decided(environ, compress), start_response)
        encoder, content_type = choose_encoder(environ.get("HTTP_ACCEPT", ""))
        fmt = exposition.format_of(encoder)
        if fmt is None:
            return fallback(_encoding_decided(environ, compress), start_response)
        output = collector.exposition(fmt)
        headers = [("Content-Type", content_type)]
        if compress:
            output = gzip.compress(output)
            headers.append(("Content-Encoding", "gzip"))
        start_response("200 OK", headers)
        return [output]

    return app


def _encoding_decided(environ: WSGIEnvironment, compress: bool) -> WSGIEnvironment:
    """The environment for prometheus_client, whose own test takes any mention of gzip
    (even `gzip;q=0`) for a yes: it sees a plain `gzip` or nothing."""
    return {**environ, "HTTP_ACCEPT_ENCODING": "gzip" if compress else ""}


def bind(collector: JobsCollector, host: str, port: int) -> WSGIServer:
    """A server bound to host:port (OSError when the address is in use or unknown)."""
    server_class = http_server.BoundedServer6 if ":" in host else http_server.BoundedServer
    return make_server(host, port, metrics_app(collector), server_class,
                       http_server.RequestHandler)


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
