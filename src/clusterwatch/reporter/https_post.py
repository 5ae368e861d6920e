"""One POST of a record to the monitor: TLS verification always on, redirects never followed,
and one deadline for the whole exchange.

A socket timeout bounds each wait for bytes, not the exchange: a server, proxy or middlebox
that sends one byte a second answers every read in time and holds the run forever (cron then
starts the next one behind the state lock). So each post has a `_Deadline`: a timer that, when
it runs out, shuts the connection's socket down, which ends whatever the exchange is waiting
in (the TLS handshake, sending the record, the status line, the answer's body). The connect
itself is bounded by the time left. A timer thread rather than SIGALRM: it works in any
thread and leaves the process's signals alone.

Python 3.6 compatible, standard library only (see the package docstring).
"""

import contextlib
import http.client
import socket
import ssl
import threading
import time
import urllib.error
import urllib.request
from typing import Any, Callable, List, Optional, Tuple

from clusterwatch.reporter import REPORTER_VERSION
from clusterwatch.reporter.envfile import check_monitor_url

# (status or None when no answer came, description)
Poster = Callable[[bytes], Tuple[Optional[int], str]]

_SNIPPET = 200  # characters of a rejection's body kept for the log and the sidecar


class _Deadline(object):
    """The end of one exchange: sockets it watches are shut down when it passes."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.expired = False
        self._ends = time.monotonic() + seconds
        self._watched: List[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True  # never keeps a finished run alive
        self._timer.start()

    def create_connection(self, address: Tuple[str, int], timeout: Any = None,
                          source_address: Any = None) -> socket.socket:
        """socket.create_connection bounded by the time left, its socket then watched."""
        left = self._ends - time.monotonic()
        if left <= 0:
            raise socket.timeout("deadline passed before connecting")
        if isinstance(timeout, (int, float)):
            left = min(left, timeout)
        sock = socket.create_connection(address, left, source_address)
        # A duplicate descriptor of the same connection: shutting it down ends reads and
        # writes on the original too, also after ssl has wrapped (and detached) the original,
        # and it is ours to close, so no other socket can ever get its number meanwhile.
        watched = sock.dup()
        with self._lock:
            self._watched.append(watched)
            if self.expired:
                _shut(watched)
        return sock

    def close(self) -> None:
        self._timer.cancel()
        with self._lock:
            for watched in self._watched:
                watched.close()
            self._watched = []

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for watched in self._watched:
                _shut(watched)


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


def _watched_by(deadline: _Deadline, connection_class: Any) -> Callable[..., Any]:
    """A connection factory for urllib's do_open whose sockets `deadline` watches."""

    def make(host: str, **kwargs: Any) -> Any:
        connection = connection_class(host, **kwargs)
        connection._create_connection = deadline.create_connection
        return connection

    return make


class _HTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, deadline: _Deadline) -> None:
        urllib.request.HTTPHandler.__init__(self)
        self.deadline = deadline

    def http_open(self, req: urllib.request.Request) -> Any:
        return self.do_open(_watched_by(self.deadline, http.client.HTTPConnection), req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, deadline: _Deadline, context: ssl.SSLContext) -> None:
        urllib.request.HTTPSHandler.__init__(self, context=context)
        self.deadline = deadline
        self.tls = context

    def https_open(self, req: urllib.request.Request) -> Any:
        return self.do_open(_watched_by(self.deadline, http.client.HTTPSConnection), req,
                            context=self.tls)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # urllib then raises the 3xx as an HTTPError


def https_poster(url: str, token: str, ca_bundle: Optional[str] = None,
                 timeout: float = 30.0) -> Poster:
    """A poster over urllib (proxies from the environment as usual) with TLS verification
    always on (system CAs or `ca_bundle`); each post ends within `timeout` seconds."""
    check_monitor_url(url)
    context = ssl.create_default_context(cafile=ca_bundle)
    headers = {
        "Content-Type": "application/json",
        "Authorization": "Bearer " + token,
        "User-Agent": "clusterwatch-harvester-reporter/" + REPORTER_VERSION,
    }

    def post(data: bytes) -> Tuple[Optional[int], str]:
        deadline = _Deadline(timeout)
        try:
            opener = urllib.request.build_opener(
                _HTTPHandler(deadline), _HTTPSHandler(deadline, context), _NoRedirect())
            return _exchange(opener, url, data, headers, deadline)
        finally:
            deadline.close()

    return post


def _exchange(opener: urllib.request.OpenerDirector, url: str, data: bytes,
              headers: Any, deadline: _Deadline) -> Tuple[Optional[int], str]:
    # S310: check_monitor_url admitted only https, or http to loopback.
    request = urllib.request.Request(url, data=data, headers=headers,  # noqa: S310
                                     method="POST")
    try:
        with opener.open(request, timeout=deadline.seconds) as response:
            response.read(65536)
            return response.getcode(), "HTTP {}".format(response.getcode())
    except urllib.error.HTTPError as exc:
        with contextlib.closing(exc):
            return exc.code, _http_error(exc)
    except urllib.error.URLError as exc:
        reason = exc.reason
        return None, _describe(reason if isinstance(reason, BaseException)
                               else OSError(str(reason)), deadline)
    except (OSError, http.client.HTTPException, ValueError) as exc:
        return None, _describe(exc, deadline)


def _http_error(exc: urllib.error.HTTPError) -> str:
    text = "http: HTTP {} {}".format(exc.code, exc.reason)
    if 300 <= exc.code < 400:
        return text + " (redirects are not followed: set the monitor URL to the final address)"
    try:
        body = exc.read(4096).decode("utf-8", "replace")
    except (OSError, http.client.HTTPException, ValueError):
        body = ""  # the deadline may end the body: the status is the answer
    body = " ".join(body.split())[:_SNIPPET]
    return text + (": " + body if body else "")


def _describe(exc: BaseException, deadline: _Deadline) -> str:
    # Whatever the shut-down socket made the exchange raise, the cause is the deadline.
    if deadline.expired or isinstance(exc, socket.timeout):
        return "timeout: no complete answer within {:g} s".format(deadline.seconds)
    if isinstance(exc, (ssl.SSLError, ssl.CertificateError)):
        return "tls: {}".format(exc)
    if isinstance(exc, socket.gaierror):
        return "connection: cannot resolve the monitor's host ({})".format(exc.strerror)
    if isinstance(exc, OSError):
        return "connection: {}".format(exc.strerror or exc)
    return "connection: {}: {}".format(type(exc).__name__, exc)
