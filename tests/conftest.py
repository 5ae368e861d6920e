"""Shared test policy: what a missing external component means."""

from __future__ import annotations

import os
from typing import Callable

import pytest

from clusterwatch.testing.services import MissingComponent, require_binary


def _need_binary(name: str) -> str:
    """Path of `name`; a missing one fails the test under CI=true and skips it elsewhere."""
    try:
        return require_binary(name)
    except MissingComponent as missing:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true and {missing}", pytrace=False)
        pytest.skip(f"{missing}")


@pytest.fixture
def need_binary() -> Callable[[str], str]:
    """`need_binary("prometheus")` returns the binary's path, or fails/skips (see above)."""
    return _need_binary
