"""Shared test policy: what a missing external component means.

Under CI=true (`.ci/run`) a missing server, binary or library fails the test that needs it,
so CI cannot pass by skipping; elsewhere the test is skipped with the reason. Test modules
import this; tests/conftest.py only turns `need_binary` into a fixture.
"""

from __future__ import annotations

import os
from typing import NoReturn, Union

import pytest

from clusterwatch.loopback.services import MissingComponent, require_binary


def unavailable(missing: Union[Exception, str]) -> NoReturn:
    """Fails the running test under CI=true, skips it elsewhere; `missing` says what and why."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI=true and {missing}", pytrace=False)
    pytest.skip(str(missing))


def need_binary(name: str) -> str:
    """Path of `name`; a missing one is `unavailable`."""
    try:
        return require_binary(name)
    except MissingComponent as missing:
        unavailable(missing)
