"""The monitor as users meet it: gunicorn on loopback (the harness), a host token made by the
management command, records posted over real HTTP, Content-Length or chunked.

Each test module starts one server (`served`, module scope) and gives every test a key of
its own, so the tests stay independent without a gunicorn start each. During the
PostgreSQL pass `private_database` puts the server on a fresh database of that server.
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


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes
    headers: Mapping[str, str]

    def json(self) -> Any:
        return json.loads(self.body)


@contextlib.contextmanager
def served(data_dir: Path, workers: Optional[int] = 2,
           extra_environ: Optional[Mapping[str, str]] = None) -> Iterator[MonitorServer]:
    with private_database(data_dir) as database, \
            monitor_server(data_dir, database=database, workers=workers,
                           extra_environ=extra_environ) as server:
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

