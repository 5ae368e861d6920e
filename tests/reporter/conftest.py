"""Fixtures of the buffer and delivery tests (helpers to import: delivery_support.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterwatch.reporter.buffer import Buffer

from .delivery_support import Clock


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def buffer(tmp_path: Path, clock: Clock) -> Buffer:
    return Buffer(str(tmp_path / "state"), clock=clock)
