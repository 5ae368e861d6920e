"""The suite's tiers, given to each test at collection by what it reaches (tests/support/reach).

- `monitor_db`: the test touches the monitor's own database: pytest-django's database
  fixtures or marker, or the harness's `private_database` (a served monitor, a subprocess
  given that database). The PostgreSQL pass of scripts/test runs exactly these.
- `service`: the test starts a process (a real daemon, the CLI, the zipapp) or needs an
  installed binary. `scripts/test --quick` runs the others.

A guard checks the first tier while the tests run: a test that opens a private database
without being marked fails, naming itself, so the PostgreSQL pass cannot miss it silently.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Optional

import pytest

from tests.support.reach import names_reached

MONITOR_DB = "monitor_db"
SERVICE = "service"

# pytest-django's fixtures that give a test the database (each requests `db` or is it).
DATABASE_FIXTURES = frozenset({"db", "transactional_db", "live_server",
                               "django_db_reset_sequences", "django_db_serialized_rollback"})
PRIVATE_DATABASE = "private_database"
# Names whose use means a process is started or an installed program is needed.
PROCESS_NAMES = frozenset({"subprocess", "multiprocessing", "Popen", "fork", "execv",
                           "need_binary", "require_binary", "unavailable"})

_running: Optional[pytest.Item] = None
# What each item reaches, read once by mark() for every later use (tests/support/workers.py).
REACHED = pytest.StashKey[frozenset[str]]()


def mark(items: list[pytest.Item]) -> None:
    """Adds the tier markers to the collected items."""
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        names = item.stash[REACHED] = names_reached(code_of(item))
        if (fixtures & DATABASE_FIXTURES or item.get_closest_marker("django_db")
                or PRIVATE_DATABASE in names):
            item.add_marker(MONITOR_DB)
        if names & PROCESS_NAMES or "need_binary" in fixtures:
            item.add_marker(SERVICE)


def code_of(item: pytest.Item) -> list[Any]:
    """The test function and the test suite's own fixtures it uses (directly or not)."""
    functions: list[Any] = []
    function = getattr(item, "function", None)
    if function is not None:
        functions.append(function)
    info = getattr(item, "_fixtureinfo", None)
    for definitions in (info.name2fixturedefs.values() if info is not None else ()):
        for definition in definitions:
            func = getattr(definition, "func", None)
            if getattr(func, "__module__", "").startswith("tests."):
                functions.append(func)
    return functions


def running(item: Optional[pytest.Item]) -> None:
    """Which test runs now (set around each test's setup, call and teardown)."""
    global _running
    _running = item


def guard_private_database() -> None:
    """Makes `private_database` fail a test that is not in the `monitor_db` tier.

    Installed before collection, so test modules import the guarded function.
    """
    try:
        from clusterwatch.loopback import monitor_server
    except ImportError:  # the modules that import it fail their collection with the reason
        return

    original = monitor_server.private_database

    @contextlib.contextmanager
    def guarded(data_dir: Path, **options: Any) -> Iterator[dict[str, str]]:
        item = _running
        if item is not None and item.get_closest_marker(MONITOR_DB) is None:
            pytest.fail(f"{item.nodeid} opens the monitor's private database, but neither "
                        f"its code nor its fixtures' code name {PRIVATE_DATABASE} (see "
                        "tests/support/tiers.py), so the PostgreSQL pass would skip it",
                        pytrace=False)
        with original(data_dir, **options) as settings:
            yield settings

    guarded.__doc__ = original.__doc__
    monitor_server.private_database = guarded  # type: ignore[assignment]
