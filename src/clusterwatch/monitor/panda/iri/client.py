"""Read one remote file through the NERSC IRI API (v1): the harvester's queue configuration.

Every IRI file operation is a task: `GET {base}/filesystem/view/{resource}?path=&size=&offset=`
answers `{"task_id": ...}`, and `GET {base}/task/{task_id}` is polled until its `status`
leaves pending/active. A completed view holds the text in `result.output.content`; a failed
task's reason is `result.output`; a canceled one has none. The API returns at most 5 MiB
(its OPS_SIZE_LIMIT) and cuts a longer file silently, so a view that comes back at the cap is
refused, never read as a configuration.

Requests go through the project's one outbound seam (clusterwatch.http_client.request),
each with one deadline for its whole exchange; `max_wait_s` bounds the whole read, polls and
requests included. Nothing is retried: a failed read waits for the next timer run, which is
also the only sane answer to the API's long outages. The token travels in the Authorization
header only.
"""

from __future__ import annotations

import json
import logging
import re
import time
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from clusterwatch.http_client import HttpResponse, TransportError, request
from clusterwatch.monitor.panda.iri.errors import IriError, clean, from_answer, from_transport
from clusterwatch.monitor.panda.iri.settings import check_view_settings

VIEW_CAP_BYTES = 5 * 1024 * 1024
SUBMIT_ANSWER_BYTES = 64 * 1024
# A JSON string may spell one byte as six (\u0001): room for the worst case at the cap.
TASK_ANSWER_BYTES = 6 * VIEW_CAP_BYTES + 64 * 1024
_RUNNING = ("pending", "active")
# An id goes back into a URL path: a "../" or a "?" from a broken server must not steer it.
_TASK_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@~-]{0,199}")

log = logging.getLogger(__name__)

# (method, url, body, headers, timeout, max_body) -> answer; tests pass their own.
HttpRequest = Callable[[str, str, Optional[bytes], Optional[Mapping[str, str]], float, int],
                       HttpResponse]


def view_file(base_url: str, resource_id: str, path: str, token: str, *,
              timeout_s: float = 30.0, poll_interval_s: float = 2.0, max_wait_s: float = 120.0,
              http: HttpRequest = request, clock: Callable[[], float] = time.monotonic,
              sleep: Callable[[float], None] = time.sleep) -> bytes:
    """The file's content (UTF-8, as the API returns the text). Raises IriError when no
    whole file came back, ConfigError for settings no request could be made with."""
    check_view_settings(base_url, resource_id, path, token)
    api = _Api(base_url.rstrip("/"), token, timeout_s, clock() + max_wait_s, http, clock)
    query = urllib.parse.urlencode({"path": path, "size": VIEW_CAP_BYTES, "offset": 0})
    submitted = api.get(f"/filesystem/view/{urllib.parse.quote(resource_id, safe='')}?{query}",
                        "the view request", SUBMIT_ANSWER_BYTES)
    task_id = _task_id(submitted)
    log.debug("IRI view task %s submitted", task_id)
    while True:
        task = api.get(f"/task/{task_id}", "the task poll", TASK_ANSWER_BYTES)
        status = task.get("status")
        log.debug("IRI view task %s is %s", task_id, clean(str(status), token, 40))
        if status not in _RUNNING:
            return _outcome(task, status, token)
        left = api.deadline - clock()
        if left <= poll_interval_s:
            raise IriError("timeout",
                           f"IRI view task not finished within {max_wait_s:g} s (still {status})")
        sleep(poll_interval_s)


@dataclass(frozen=True)
class _Api:
    """GETs under the base URL, each within both its own timeout and the read's deadline."""

    base_url: str
    token: str = field(repr=False)  # a repr may reach a log or a test's report
    timeout_s: float
    deadline: float
    http: HttpRequest
    clock: Callable[[], float]

    def get(self, route: str, step: str, max_body: int) -> dict[str, Any]:
        left = self.deadline - self.clock()
        if left <= 0:
            raise IriError("timeout", f"IRI API: no time left for {step}")
        timeout = min(self.timeout_s, left)
        headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
        try:
            answer = self.http("GET", self.base_url + route, None, headers, timeout, max_body)
        except TransportError as exc:
            raise from_transport(exc, step, timeout) from None
        if answer.status != 200:
            raise from_answer(answer.status, answer.body, step, self.token)
        try:
            document = json.loads(answer.body)
        except (ValueError, RecursionError):  # also bytes not UTF-8, or nested past the stack
            document = None
        if not isinstance(document, dict):
            raise IriError("garbage", f"IRI API's answer to {step} is not a JSON object", 200)
        return document


def _task_id(submitted: dict[str, Any]) -> str:
    task_id = submitted.get("task_id")
    if not isinstance(task_id, str) or not _TASK_ID.fullmatch(task_id):
        raise IriError("garbage", "IRI API's answer to the view request has no usable task_id",
                       200)
    return task_id


def _outcome(task: dict[str, Any], status: object, token: str) -> bytes:
    result = task.get("result")
    output = result.get("output") if isinstance(result, dict) else None
    if status == "failed":
        reason = clean(output, token) if isinstance(output, str) else "no reason given"
        raise IriError("failed", f"IRI view task failed: {reason or 'no reason given'}")
    if status == "canceled":
        raise IriError("canceled", "IRI view task was canceled")
    if status != "completed":
        raise IriError("garbage", f"IRI task status {clean(str(status), token, 40)!r} is "
                                  "none of pending, active, completed, failed, canceled")
    # The reference server nests the text in output.content; some deployments' clients
    # found it in output itself.
    content = output.get("content") if isinstance(output, dict) else output
    if not isinstance(content, str):
        raise IriError("garbage", "IRI view task completed without the file's content")
    try:
        data = content.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate escaped in the JSON
        raise IriError("garbage", "IRI view task's content is not text") from None
    if len(data) >= VIEW_CAP_BYTES:
        raise IriError("too_large", f"the file is {VIEW_CAP_BYTES // (1024 * 1024)} MiB or more, "
                                    "what the IRI API's view returns at most: not read")
    return data
