"""A loopback stand-in for NERSC's IRI API (v1), as far as viewing a file goes.

`GET /api/v1/filesystem/view/{resource}?path=&size=&offset=` answers a task id and
`GET /api/v1/task/{id}` the task: pending, then active, then completed with
`result.output.content`, failed with `result.output` ("Error: ..."), or canceled without a
result, as the reference implementation (doe-iri/iri-facility-api-python, v1) shapes them.
Errors are RFC 9457 problem documents whose `instance` is the request's whole URL, query
included, as the real server writes them. Like the real API, a view returns at most
OPS_SIZE_LIMIT bytes and cuts a longer file without saying so.

Knobs for the ways the field has seen it fail, settable between requests: `fail_all` (every
call answers that status and detail: the 15-hour 500 outage, a 403), `delay_s` (every answer
held back that long), `hold` (every answer held until `release()`; stopping the server drops
it: a server that never answers, whatever the client's timeout), `polls_before_done`,
`outcome` (force "failed" or "canceled"), `garbage` ("view" or "task": that answer is not
JSON), `task_id` (the id the next view hands out), `echo_secrets` (a careless server whose
problem details quote the Authorization header and the URL). A wrong or missing bearer token
gets 401. Pass `tls` (a server context) for HTTPS.
"""

from __future__ import annotations

import json
import ssl
import threading
import urllib.parse
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional

from clusterwatch.loopback.http_recorder import (
    LoopbackHTTPServer,
    RecordedRequest,
    ScriptedResponse,
)

PREFIX = "/api/v1"
OPS_SIZE_LIMIT = 5 * 1024 * 1024
OUTAGE = (500, "An unexpected error occurred")  # NERSC, 2026-09-12, for over 15 hours
NO_USER = (403, "Authentication succeeded but no user ID was identified")
_JSON = {"Content-Type": "application/json"}
_PROBLEM = {"Content-Type": "application/problem+json"}


@dataclass
class _Task:
    resource: str
    path: str
    size: int
    offset: int
    polls: int = 0


class FakeIri(LoopbackHTTPServer):
    """Serves `files` ({resource id: {absolute path: bytes}}) to holders of `token`."""

    def __init__(self, token: str, files: Mapping[str, Mapping[str, bytes]],
                 tls: Optional[ssl.SSLContext] = None) -> None:
        super().__init__(tls)
        self.token = token
        self.files = {resource: dict(paths) for resource, paths in files.items()}
        self.fail_all: Optional[tuple[int, str]] = None
        self.delay_s = 0.0
        self.hold = False
        self.polls_before_done = 1
        self.outcome: Optional[str] = None
        self.garbage: Optional[str] = None
        self.task_id: Optional[str] = None
        self.echo_secrets = False
        self._lock = threading.Lock()
        self._tasks: dict[str, _Task] = {}
        self._requests: list[RecordedRequest] = []

    @property
    def base_url(self) -> str:
        """What a client is configured with, e.g. https://127.0.0.1:40123/api/v1."""
        return self.url + PREFIX

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def respond(self, request: RecordedRequest) -> ScriptedResponse:
        with self._lock:
            self._requests.append(request)
            status, body, headers = self._answer(request)
        return ScriptedResponse(status, body, headers, self.delay_s, self.hold)

    def _answer(self, request: RecordedRequest) -> tuple[int, bytes, Mapping[str, str]]:
        if request.headers.get("authorization") != f"Bearer {self.token}":
            return self._problem(request, 401, "Unauthorized", "Invalid API key")
        if self.fail_all is not None:
            return self._problem(request, self.fail_all[0], "Error", self.fail_all[1])
        route = request.route
        if request.method == "GET" and route.startswith(PREFIX + "/filesystem/view/"):
            resource = urllib.parse.unquote(route[len(PREFIX + "/filesystem/view/"):])
            return self._view(request, resource)
        if request.method == "GET" and route.startswith(PREFIX + "/task/"):
            return self._poll(request, urllib.parse.unquote(route[len(PREFIX + "/task/"):]))
        return self._problem(request, 404, "Not Found", "Not Found")

    def _view(self, request: RecordedRequest,
              resource: str) -> tuple[int, bytes, Mapping[str, str]]:
        if resource not in self.files:
            return self._problem(request, 404, "Not Found", f"Resource {resource} not found")
        query = {name: values[-1] for name, values in request.query.items()}
        try:
            size = int(query.get("size", OPS_SIZE_LIMIT))
            offset = int(query.get("offset", 0))
            path = query["path"]
        except (KeyError, ValueError):
            return self._problem(request, 422, "Bad Request", "path, size or offset invalid")
        if not 1 <= size <= OPS_SIZE_LIMIT or offset < 0:
            return self._problem(request, 422, "Bad Request",
                                 f"size must be 1 to {OPS_SIZE_LIMIT}, offset at least 0")
        if self.garbage == "view":
            return 200, b"<html><body>Service temporarily degraded</body></html>", {}
        task_id = self.task_id if self.task_id is not None else f"task-{uuid.uuid4()}"
        self.task_id = None
        self._tasks[task_id] = _Task(resource, path, size, offset)
        submitted = {"task_id": task_id, "task_uri": f"{self.base_url}/task/{task_id}"}
        return 200, _json(submitted), _JSON

    def _poll(self, request: RecordedRequest,
              task_id: str) -> tuple[int, bytes, Mapping[str, str]]:
        task = self._tasks.get(task_id)
        if task is None:
            return self._problem(request, 404, "Not Found", f"Task {task_id} not found")
        if self.garbage == "task":
            return 200, b'{"id": "' + task_id.encode() + b'", "status": ', _JSON
        task.polls += 1
        document: dict[str, Any] = {
            "id": task_id,
            "command": {"router": "filesystem", "command": "view",
                        "args": {"path": task.path, "size": task.size, "offset": task.offset}},
        }
        if task.polls <= self.polls_before_done:
            document["status"] = "pending" if task.polls == 1 else "active"
        else:
            document.update(self._finished(task))
        return 200, _json(document), _JSON

    def _finished(self, task: _Task) -> dict[str, Any]:
        content = self.files[task.resource].get(task.path)
        if self.outcome == "canceled":
            return {"status": "canceled", "result": None}
        if self.outcome == "failed" or content is None:
            return {"status": "failed",
                    "result": {"output": f"Error: {task.path}: No such file or directory"}}
        piece = content[task.offset:task.offset + task.size].decode("utf-8", "replace")
        return {"status": "completed", "result": {"output": {
            "content": piece, "content_type": "bytes", "start_position": task.offset,
            "end_position": task.offset + len(piece)}}}

    def _problem(self, request: RecordedRequest, status: int, title: str,
                 detail: str) -> tuple[int, bytes, Mapping[str, str]]:
        instance = self.url + request.path
        if self.echo_secrets:
            sent = request.headers.get("authorization")
            detail += f" (request {instance}, Authorization: {sent})"
        document = {"type": f"{self.url}/problems/{title.lower().replace(' ', '-')}",
                    "title": title, "status": status, "detail": detail, "instance": instance}
        return status, _json(document), _PROBLEM


def _json(document: Mapping[str, Any]) -> bytes:
    return json.dumps(document, ensure_ascii=False).encode()  # as Starlette writes JSON
