"""A loopback HTTP server that records requests and answers from a script.

It plays the Slack incoming webhook (`fake_slack()`, default answer 200 "ok") and the
Alertmanager webhook receiver. Requests are recorded when they arrive, before any scripted
hold or delay, so a test can see a request whose answer is still pending.

A scripted answer with `hold=True` is kept back until the test says so: `wait_held()`
blocks until a request is being held (it raises, naming what arrived, at a generous
deadline), `release()` lets the held answers go. A test that needs "the client is still
waiting" synchronises on those events instead of sleeping for a delivery to be slow enough;
a client timeout test holds the answer and lets only the client's own clock decide. Stopping
the server wakes held and delayed handlers, which then close the connection without
answering, so no held answer outlives the test.
"""

from __future__ import annotations

import http.server
import json
import ssl
import sys
import threading
import time
import urllib.parse
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, TypeVar, cast

LOOPBACK = "127.0.0.1"
SLACK_WEBHOOK_PATH = "/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX"

# Slack's permanent rejections of an incoming-webhook post: (HTTP status, body).
SLACK_PERMANENT_ERRORS: tuple[tuple[int, str], ...] = (
    (400, "invalid_payload"),
    (400, "invalid_token"),
    (403, "action_prohibited"),
    (403, "invalid_token"),
    (404, "no_service"),
    (404, "channel_not_found"),
    (410, "channel_is_archived"),
)

_TEXT = {"Content-Type": "text/html"}  # what Slack labels its one-word answers with
_JSON = {"Content-Type": "application/json"}


@dataclass(frozen=True)
class RecordedRequest:
    """One request as received. `headers` has lower-cased names; `path` keeps the query."""

    method: str
    path: str
    headers: Mapping[str, str]
    body: bytes
    received_at: float  # time.monotonic() on arrival

    @property
    def route(self) -> str:
        return urllib.parse.urlsplit(self.path).path

    @property
    def query(self) -> dict[str, list[str]]:
        return urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)

    def text(self) -> str:
        return self.body.decode("utf-8")

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass(frozen=True)
class ScriptedResponse:
    """An answer: status, body, extra headers, seconds to wait before sending it, and whether
    it is held until the test calls the server's `release()` (or stops the server)."""

    status: int = 200
    body: bytes = b"ok"
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0
    hold: bool = False


class SlackResponses:
    """What Slack's incoming webhook answers, as ScriptedResponses."""

    @staticmethod
    def ok() -> ScriptedResponse:
        return ScriptedResponse(200, b"ok", _TEXT)

    @staticmethod
    def server_error(status: int = 500) -> ScriptedResponse:
        return ScriptedResponse(status, b"internal_error", _TEXT)

    @staticmethod
    def timeout(delay: Optional[float] = None) -> ScriptedResponse:
        """Accepted, but not answered: held until `release()` or the server stops, so any
        client timeout runs out by the client's own clock. With `delay`, answered after it."""
        if delay is None:
            return ScriptedResponse(200, b"ok", _TEXT, hold=True)
        return ScriptedResponse(200, b"ok", _TEXT, delay=delay)

    @staticmethod
    def held() -> ScriptedResponse:
        """Answered 200 "ok" once the test calls `release()`: a delivery kept in flight."""
        return ScriptedResponse(200, b"ok", _TEXT, hold=True)

    @staticmethod
    def rate_limited(retry_after: Optional[str] = "1") -> ScriptedResponse:
        """429; `retry_after` is sent verbatim as Retry-After (None: no header)."""
        headers = dict(_JSON)
        if retry_after is not None:
            headers["Retry-After"] = retry_after
        body = json.dumps({"retry_after": 1, "ok": False, "error": "rate_limited"})
        return ScriptedResponse(429, body.encode(), headers)

    @staticmethod
    def permanent(status: int, error: str) -> ScriptedResponse:
        return ScriptedResponse(status, error.encode(), _TEXT)

    @staticmethod
    def invalid_payload() -> ScriptedResponse:
        return SlackResponses.permanent(400, "invalid_payload")

    @staticmethod
    def invalid_token(status: int = 403) -> ScriptedResponse:
        return SlackResponses.permanent(status, "invalid_token")

    @staticmethod
    def action_prohibited() -> ScriptedResponse:
        return SlackResponses.permanent(403, "action_prohibited")

    @staticmethod
    def no_service() -> ScriptedResponse:
        return SlackResponses.permanent(404, "no_service")

    @staticmethod
    def channel_not_found() -> ScriptedResponse:
        return SlackResponses.permanent(404, "channel_not_found")

    @staticmethod
    def channel_is_archived() -> ScriptedResponse:
        return SlackResponses.permanent(410, "channel_is_archived")


_S = TypeVar("_S", bound="LoopbackHTTPServer")


class LoopbackHTTPServer:
    """A ThreadingHTTPServer on 127.0.0.1 (kernel-chosen port) in a daemon thread.

    Subclasses implement `respond`, which runs on the server's handler threads. With `tls`
    (a server context) it speaks HTTPS; each connection's handshake runs on its handler
    thread, so a client that never completes one holds no other request. An answer with
    `hold=True` waits for `release()`; `held`, `wait_held()` show what is being held.
    """

    def __init__(self, tls: Optional[ssl.SSLContext] = None) -> None:
        self.tls = tls
        self._server: Optional[_Server] = None
        self._thread: Optional[threading.Thread] = None
        self._stopping = threading.Event()
        self._holding = threading.Condition()
        self._held: list[tuple[RecordedRequest, threading.Event]] = []

    def respond(self, request: RecordedRequest) -> ScriptedResponse:
        raise NotImplementedError

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("server not started")
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """Base URL, e.g. http://127.0.0.1:40123 (no trailing slash)."""
        scheme = "https" if self.tls is not None else "http"
        return f"{scheme}://{LOOPBACK}:{self.port}"

    def start(self: _S) -> _S:
        if self._server is not None:
            raise RuntimeError("server already started")
        self._stopping.clear()
        self._server = _Server((LOOPBACK, 0), _Handler, self)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"{type(self).__name__}-{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    @property
    def held(self) -> list[RecordedRequest]:
        """The requests whose answers are being held now, oldest first."""
        with self._holding:
            return [request for request, _gate in self._held]

    def wait_held(self, count: int = 1, timeout: float = 60.0) -> list[RecordedRequest]:
        """Block until at least `count` answers are being held; return their requests.

        `timeout` is a deadline for the failure message, not part of what a test proves:
        TimeoutError says how many were held and which requests arrived.
        """
        deadline = time.monotonic() + timeout
        with self._holding:
            while len(self._held) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(
                        f"{len(self._held)} of {count} answers held within {timeout:g} s; "
                        f"received: {self._received()}")
                self._holding.wait(left)
            return [request for request, _gate in self._held]

    def release(self, count: Optional[int] = None) -> int:
        """Let the held answers go (the oldest `count`, default all); return how many.

        An answer scripted with `hold=True` that arrives later is held again.
        """
        with self._holding:
            chosen = self._held if count is None else self._held[:count]
            for _request, gate in chosen:
                gate.set()
            released = len(chosen)
            del self._held[:released]
            self._holding.notify_all()
        return released

    def _hold(self, request: RecordedRequest) -> bool:
        """Runs on the handler thread: wait for release(); False if the server is stopping."""
        gate = threading.Event()
        with self._holding:
            if self._stopping.is_set():
                return False
            self._held.append((request, gate))
            self._holding.notify_all()
        gate.wait()
        return not self._stopping.is_set()

    def _received(self) -> list[str]:
        """What arrived, for failure messages (subclasses that record requests say more)."""
        return [f"{request.method} {request.path}" for request, _gate in self._held]

    def stop(self) -> None:
        server, thread = self._server, self._thread
        if server is None:
            return
        self._stopping.set()  # wakes handlers sleeping on a scripted delay
        with self._holding:  # and those holding an answer: they drop the connection
            for _request, gate in self._held:
                gate.set()
            self._held.clear()
            self._holding.notify_all()
        server.shutdown()
        server.server_close()
        if thread is not None:
            thread.join()
        self._server = self._thread = None

    def __enter__(self: _S) -> _S:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


class HttpRecorder(LoopbackHTTPServer):
    """Records every request; answers with the scripted responses in order, then `default`."""

    def __init__(
        self,
        script: Iterable[ScriptedResponse] = (),
        default: Optional[ScriptedResponse] = None,
    ) -> None:
        super().__init__()
        self._changed = threading.Condition()
        self._requests: list[RecordedRequest] = []
        self._script: deque[ScriptedResponse] = deque(script)
        self._default = default if default is not None else ScriptedResponse(200, b"ok", _TEXT)

    def enqueue(self, *responses: ScriptedResponse) -> None:
        with self._changed:
            self._script.extend(responses)

    def set_default(self, response: ScriptedResponse) -> None:
        with self._changed:
            self._default = response

    @property
    def pending(self) -> int:
        """Scripted responses not yet played."""
        with self._changed:
            return len(self._script)

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._changed:
            return list(self._requests)

    def clear(self) -> None:
        with self._changed:
            self._requests.clear()

    def wait_for(
        self,
        predicate: Optional[Callable[[RecordedRequest], bool]] = None,
        timeout: float = 10.0,
        count: int = 1,
    ) -> list[RecordedRequest]:
        """Block until `count` recorded requests match `predicate` (default: any); return them.

        Raises TimeoutError, naming what did arrive, after `timeout` seconds.
        """
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                matches = [r for r in self._requests if predicate is None or predicate(r)]
                if len(matches) >= count:
                    return matches
                left = deadline - time.monotonic()
                if left <= 0:
                    seen = [f"{r.method} {r.path}" for r in self._requests]
                    raise TimeoutError(
                        f"{len(matches)} of {count} matching requests within {timeout:g} s; "
                        f"received: {seen}"
                    )
                self._changed.wait(left)

    def _received(self) -> list[str]:
        return [f"{r.method} {r.path}" for r in self.requests]

    def respond(self, request: RecordedRequest) -> ScriptedResponse:
        with self._changed:
            self._requests.append(request)
            response = self._script.popleft() if self._script else self._default
            self._changed.notify_all()
        return response


def fake_slack(
    script: Iterable[ScriptedResponse] = (), default: Optional[ScriptedResponse] = None
) -> HttpRecorder:
    """A recorder answering like Slack; post to `recorder.url + SLACK_WEBHOOK_PATH`."""
    return HttpRecorder(script, default if default is not None else SlackResponses.ok())


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[http.server.BaseHTTPRequestHandler],
        owner: LoopbackHTTPServer,
    ) -> None:
        self.owner = owner
        super().__init__(address, handler)

    def get_request(self) -> tuple[Any, Any]:
        connection, address = super().get_request()
        if self.owner.tls is not None:
            connection = self.owner.tls.wrap_socket(connection, server_side=True,
                                                    do_handshake_on_connect=False)
        return connection, address

    def finish_request(self, request: Any, client_address: Any) -> None:
        if isinstance(request, ssl.SSLSocket):
            request.do_handshake()  # here, on the handler's thread, not the accepting one
        super().finish_request(request, client_address)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that gave up (timeout preset) or refused the test certificate is
        # expected, not worth a traceback.
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError, ssl.SSLError)):
            return
        super().handle_error(request, client_address)


class _Handler(http.server.BaseHTTPRequestHandler):
    def _answer(self) -> None:
        owner = cast(_Server, self.server).owner
        request = RecordedRequest(
            method=self.command,
            path=self.path,
            headers={name.lower(): value for name, value in self.headers.items()},
            body=self._read_body(),
            received_at=time.monotonic(),
        )
        response = owner.respond(request)
        if response.hold and not owner._hold(request):
            return  # server stopping: drop the connection unanswered
        if response.delay > 0 and owner._stopping.wait(response.delay):
            return  # server stopping: drop the connection unanswered
        try:
            self.send_response(response.status)
            for name, value in response.headers.items():
                self.send_header(name, value)
            if not any(name.lower() == "content-length" for name in response.headers):
                self.send_header("Content-Length", str(len(response.body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(response.body)
        except ConnectionError:
            pass  # the client is gone

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _answer

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def log_message(self, format: str, *args: Any) -> None:
        pass  # tests read the recording, not the access log
