"""The migrated template the monitor's process tests copy instead of migrating each
(tests/monitor/conftest.py): a copy is fully migrated, and a copy's writes stay its own.
On SQLite a file copy, on PostgreSQL (its pass) `CREATE DATABASE ... TEMPLATE`."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterwatch.loopback.monitor_server import manage, monitor_environ, private_database

pytestmark = pytest.mark.integration

# Whether migrate has anything left to do, and how many host keys the database holds.
_STATE = ("from django.core.management import call_command; "
          "call_command('migrate', plan=True); "
          "from clusterwatch.monitor.core.models import HostTokenKey; "
          "print('keys', HostTokenKey.objects.count())")


def test_a_copy_is_migrated_and_its_writes_stay_its_own(
        tmp_path: Path, migrated_database: dict[str, str]) -> None:
    with private_database(tmp_path / "first", template=migrated_database) as first:
        manage(monitor_environ(tmp_path / "first", first), "create_host_token", "copy01")
        with private_database(tmp_path / "second", template=migrated_database) as second:
            state = manage(monitor_environ(tmp_path / "second", second), "shell", "-c", _STATE)
    lines = [line.strip() for line in state.stdout.strip().splitlines()]
    assert "No planned migration operations." in lines
    assert lines[-1] == "keys 0"  # the first copy's key is in neither the template nor this
