"""The ingest tests' shared monitor under gunicorn (tests/monitor/served_support.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from clusterwatch.loopback.monitor_server import MonitorServer
from tests.monitor.served_support import shared_monitor


@pytest.fixture(scope="session")
def served_monitor(tmp_path_factory: pytest.TempPathFactory,
                   migrated_database: dict[str, str]) -> Iterator[MonitorServer]:
    """One monitor with the SHARED_* settings of served_support, on a copy of the migrated
    template, for the modules that only post records and read them back: each test gives
    its records keys of its own, so no test sees another's."""
    with shared_monitor(tmp_path_factory.mktemp("served"), migrated_database) as server:
        yield server
