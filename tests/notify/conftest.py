"""Fixtures for the notify tests: loopback servers and a dead port (helpers: support.py)."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from clusterwatch.loopback.http_recorder import HttpRecorder, ScriptedResponse, fake_slack
from tests.notify.support import SECRET_PATH


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
