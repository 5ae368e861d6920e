"""The notify tests' shared constants and helpers: canned answers, events, the secret.

Imported by the tests; conftest.py only turns the loopback servers into fixtures (a
conftest is pytest's, never imported as a module).
"""

from __future__ import annotations

import calendar
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Union

from clusterwatch.http_client import HttpResponse, TransportError
from clusterwatch.notify.event import Event
from clusterwatch.notify.incident import Action

SECRET = "SECRETTOKEN"
SECRET_PATH = f"/services/T000/B000/{SECRET}"
# 2026-10-02 14:16:00Z, the detection time of the spec's example line.
T0 = float(calendar.timegm((2026, 10, 2, 14, 16, 0)))
CLIENT_TIMEOUT = 0.5  # seconds; short so that the timeout cases stay fast


def make_event(
    seq: int = 1,
    t: float = T0,
    action: str = "alert",  # the word, as outboxes store it
    target: str = "gpu:192.0.2.10:9100",
    status: str = "stale",
    incident: str = "inc-1",
) -> Event:
    return Event(seq, t, Action(action), target, status, incident)


Canned = Union[HttpResponse, TransportError]


@dataclass
class Call:
    url: str
    body: bytes
    headers: Mapping[str, str]
    timeout: float


class CannedPost:
    """Stands in for the HTTP seam: answers from a list (the last one repeats), records calls."""

    def __init__(self, answers: Sequence[Canned]) -> None:
        self._answers = list(answers)
        self.calls: list[Call] = []

    def __call__(
        self, url: str, body: bytes, headers: Mapping[str, str], timeout: float
    ) -> HttpResponse:
        self.calls.append(Call(url, body, headers, timeout))
        answer = self._answers[min(len(self.calls), len(self._answers)) - 1]
        if isinstance(answer, TransportError):
            raise answer
        return answer
