"""The monitor as users meet it: gunicorn on loopback (the harness), a host token made by the
management command, records posted over real HTTP, Content-Length or chunked.

The modules that need only a monitor taking records share one server for the session
(`served_monitor` in tests/monitor/ingest/conftest.py, started by `shared_monitor`), and
every test uses a key of its own, so the tests stay independent without a gunicorn start
each; a module that needs other settings starts its own (`served`). During the PostgreSQL
pass `private_database` puts a server on a fresh database of that server, a copy of the
migrated template when one is given.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import http.client
import json
import socket
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from clusterwatch.loopback.monitor_server import MonitorServer, monitor_server, private_database
from tests.monitor.records import example

HTTP_TIMEOUT_S = 30.0
# The shared monitor's settings: those its modules prove are each taken, none that would
# change what another of them sees (their records are about 9 KB, dated within minutes).
SHARED_WORKERS = 4  # as the shipped unit runs; test_concurrent races more senders than this
SHARED_RECORD_LIMIT = 60_000  # CLUSTERWATCH_MAX_RECORD_BYTES (test_chunked)
SHARED_CLOCK_SKEW_S = 120  # CLUSTERWATCH_MAX_CLOCK_SKEW_S (test_horizon; the default is 600)


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes
    headers: Mapping[str, str]

    def json(self) -> Any:
        return json.loads(self.body)


@contextlib.contextmanager
def served(data_dir: Path, workers: Optional[int] = 2,
           extra_environ: Optional[Mapping[str, str]] = None,
           template: Optional[Mapping[str, str]] = None) -> Iterator[MonitorServer]:
    """The monitor under gunicorn on a private database; `template` (the `migrated_database`
    fixture) makes that a copy of a migrated one, which skips the server's `migrate`."""
    with private_database(data_dir, template=template) as database, \
            monitor_server(data_dir, database=database, workers=workers,
                           extra_environ=extra_environ, migrate=template is None) as server:
        yield server


@contextlib.contextmanager
def shared_monitor(data_dir: Path, template: Mapping[str, str]) -> Iterator[MonitorServer]:
    """The session's monitor for the modules that need one taking records (the SHARED_*
    settings above)."""
    with served(data_dir, workers=SHARED_WORKERS, template=template, extra_environ={
            "CLUSTERWATCH_MAX_RECORD_BYTES": str(SHARED_RECORD_LIMIT),
            "CLUSTERWATCH_MAX_CLOCK_SKEW_S": str(SHARED_CLOCK_SKEW_S)}) as server:
        yield server


def token_for(server: MonitorServer, *keys: str) -> str:
    """A new token for `keys`, as `create_host_token` prints it (its last line)."""
    return server.manage("create_host_token", *keys).stdout.strip().splitlines()[-1]


def record_body(key: str, collected_at: dt.datetime, **changes: Any) -> bytes:
    """The reporter's example record for `key` at `collected_at`, as the bytes it posts."""
    record = example(key, collected_at)
    record.update(changes)
    return json.dumps(record).encode()


def post(server: MonitorServer, key: str, token: str, body: bytes, *,
         chunk_bytes: Optional[int] = None,
         connection: Optional[http.client.HTTPConnection] = None) -> Answer:
    """POST `body` to `key`'s URL: with a Content-Length, or chunked (`chunk_bytes` a chunk)
    the way a streaming client sends it. To gunicorn, or over `connection` (to a proxy)."""
    connection = connection or http.client.HTTPConnection("127.0.0.1", server.port,
                                                          timeout=HTTP_TIMEOUT_S)
    headers = {"Authorization": f"Token {token}", "Content-Type": "application/json"}
    try:
        if chunk_bytes is None:
            connection.request("POST", f"/api/host-reports/{key}/", body=body, headers=headers)
        else:
            chunks = (body[start:start + chunk_bytes]
                      for start in range(0, len(body), chunk_bytes))
            connection.request("POST", f"/api/host-reports/{key}/", body=chunks,
                               headers=headers, encode_chunked=True)
        response = connection.getresponse()
        return Answer(response.status, response.read(), dict(response.getheaders()))
    finally:
        connection.close()


def latest(server: MonitorServer, key: str, token: str,
           connection: Optional[http.client.HTTPConnection] = None) -> Answer:
    """GET the key's latest record (from gunicorn, or over `connection`)."""
    connection = connection or http.client.HTTPConnection("127.0.0.1", server.port,
                                                          timeout=HTTP_TIMEOUT_S)
    try:
        connection.request("GET", f"/api/host-reports/{key}/",
                           headers={"Authorization": f"Token {token}"})
        response = connection.getresponse()
        return Answer(response.status, response.read(), dict(response.getheaders()))
    finally:
        connection.close()


def exchange(port: int, data: bytes, timeout: float = HTTP_TIMEOUT_S) -> tuple[int, bytes]:
    """Send `data` (a whole request, however malformed) to 127.0.0.1:`port`, close our
    sending side, read to the end: (the answer's status, its body)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return int(answer.split(b" ", 2)[1]), answer.partition(b"\r\n\r\n")[2]


def now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc).replace(microsecond=0)

