"""Fixtures for every test folder; the policy behind them is in tests/components.py."""

from __future__ import annotations

from typing import Callable

import pytest

from tests.components import need_binary as _need_binary  # the fixture below has its name


@pytest.fixture
def need_binary() -> Callable[[str], str]:
    """`need_binary("prometheus")` returns the binary's path, or fails/skips."""
    return _need_binary
