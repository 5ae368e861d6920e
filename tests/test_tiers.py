"""The tiers scripts/test runs (tests/support/tiers.py): each test is marked by what it reaches."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clusterwatch.loopback import monitor_server
from tests.support import tiers
from tests.support.reach import names_reached


def _opens_a_database(data_dir: Path) -> Iterator[dict[str, str]]:
    with monitor_server.private_database(data_dir) as settings:  # two calls below the test
        yield settings


def _through_a_helper(data_dir: Path) -> Iterator[dict[str, str]]:
    yield from _opens_a_database(data_dir)


class _Spawner:
    def start(self) -> None:
        subprocess.run(["true"], check=True)


@pytest.fixture
def spawner() -> _Spawner:
    return _Spawner()


def _markers(request: pytest.FixtureRequest) -> set[str]:
    return {mark.name for mark in request.node.iter_markers()}


def test_a_test_of_pure_code_is_in_no_tier(request: pytest.FixtureRequest) -> None:
    assert not _markers(request) & {tiers.MONITOR_DB, tiers.SERVICE}


def test_a_test_with_the_django_database_is_in_the_postgresql_pass(
        db: None, request: pytest.FixtureRequest) -> None:
    assert tiers.MONITOR_DB in _markers(request)


def test_a_test_that_opens_a_private_database_through_helpers_is_in_it_too(
        request: pytest.FixtureRequest) -> None:
    assert tiers.MONITOR_DB in _markers(request)
    assert _through_a_helper  # named here, so followed: two calls down it names the database


def test_a_fixture_that_starts_a_process_puts_the_test_in_the_service_tier(
        spawner: _Spawner, request: pytest.FixtureRequest) -> None:
    assert _markers(request) & {tiers.MONITOR_DB, tiers.SERVICE} == {tiers.SERVICE}


def test_names_are_followed_through_functions_and_class_methods_only_of_the_suite() -> None:
    names = names_reached([_through_a_helper, _Spawner])
    assert {"private_database", "subprocess", "run"} <= names
    # Library code is not followed: what subprocess.run itself calls is not named.
    assert "_execute_child" not in names


def test_the_guard_fails_an_unmarked_test_that_opens_a_private_database(
        tmp_path: Path, request: pytest.FixtureRequest) -> None:
    class Unmarked:
        nodeid = "tests/elsewhere.py::test_unlisted"

        def get_closest_marker(self, name: str) -> Any:
            return None

    tiers.running(Unmarked())  # type: ignore[arg-type]
    try:
        with pytest.raises(pytest.fail.Exception, match="test_unlisted opens the monitor's "
                           "private database"), monitor_server.private_database(tmp_path):
            pass
    finally:
        tiers.running(request.node)
    with monitor_server.private_database(tmp_path) as settings:  # this test is marked
        assert settings["CLUSTERWATCH_DATABASE_URL"]
