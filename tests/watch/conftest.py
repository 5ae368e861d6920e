"""Fixtures of the watch tests: a small pool on loopback (tests/watch/support.py)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from clusterwatch.loopback.fake_prometheus import FakePrometheus
from clusterwatch.loopback.http_recorder import fake_slack

from .support import Pool


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    """main() points the root logger at the test's stderr; give the next test its own."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


@pytest.fixture
def pool(tmp_path: Path) -> Iterator[Pool]:
    with FakePrometheus() as prometheus, fake_slack() as slack:
        yield Pool(tmp_path, prometheus, slack)
