"""Fixtures for the notify tests: loopback servers, a dead port, canned answers, events."""

from __future__ import annotations

import calendar
import socket
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Union

import pytest

from clusterwatch.notify.event import Event
from clusterwatch.notify.http import HttpResponse, TransportError
from clusterwatch.testing.http_recorder import HttpRecorder, ScriptedResponse, fake_slack

SECRET = "SECRETTOKEN"
SECRET_PATH = f"/services/T000/B000/{SECRET}"
# 2026-10-02 14:16:00Z, the detection time of the spec's example line.
T0 = float(calendar.timegm((2026, 10, 2, 14, 16, 0)))
CLIENT_TIMEOUT = 0.5  # seconds; short so that the timeout cases stay fast


def make_event(
    seq: int = 1,
    t: float = T0,
    action: str = "alert",
    target: str = "gpu:192.0.2.10:9100",
    status: str = "stale",
    incident: str = "inc-1",
) -> Event:
    return Event(seq, t, action, target, status, incident)


@pytest.fixture
def slack_server() -> Iterator[HttpRecorder]:
    """A loopback Slack webhook answering 200 "ok" unless a test scripts otherwise."""
    with fake_slack() as server:
        yield server


@pytest.fixture
def other_slack_server() -> Iterator[HttpRecorder]:
    with fake_slack() as server:
        yield server


@pytest.fixture
def recorder() -> Iterator[HttpRecorder]:
    """A loopback receiver answering 200 with an empty body unless scripted otherwise."""
    with HttpRecorder(default=ScriptedResponse(200, b"")) as server:
        yield server


@pytest.fixture
def refused_url() -> str:
    """A loopback URL where nothing listens: connecting is refused."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}{SECRET_PATH}"


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
