"""The monitor's console script as a timer or an operator runs it, for the tests of several
folders: its path beside the interpreter, its environment for a data directory, and that
data directory made a copy of one migrated once (`migrate` takes seconds, many tests need
only its result).

The environment drops the caller's CLUSTERWATCH_* and Django settings, so the database is
SQLite in the data directory whichever pass runs (the PostgreSQL pass included).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Optional

from clusterwatch.loopback.monitor_server import manage, monitor_environ

CLUSTERWATCH = str(Path(sys.executable).with_name("clusterwatch"))  # the installed script
DATABASE = "monitor.sqlite3"  # in the data directory: what the settings default to


def console(environ: Mapping[str, str], *arguments: str) -> subprocess.CompletedProcess[str]:
    """`clusterwatch monitor ARGUMENTS`, the installed console script, output captured."""
    return subprocess.run([CLUSTERWATCH, "monitor", *arguments], env=dict(environ),
                          capture_output=True, text=True, timeout=300, check=False,
                          stdin=subprocess.DEVNULL)


def console_environ(data: Path, extra: Optional[Mapping[str, str]] = None) -> dict[str, str]:
    """The caller's environment less CLUSTERWATCH_* and DJANGO_SETTINGS_MODULE, with
    CLUSTERWATCH_DATA_DIR=`data` and `extra`."""
    env = {name: value for name, value in os.environ.items()
           if not name.startswith("CLUSTERWATCH_") and name != "DJANGO_SETTINGS_MODULE"}
    return {**env, "CLUSTERWATCH_DATA_DIR": str(data), **(extra or {})}


def migrate_data_dir(data: Path) -> Path:
    """`data` (created) with `clusterwatch monitor migrate` run on its SQLite database; a
    failed migrate raises with its output. The template the `migrated_sqlite` fixture gives."""
    data.mkdir(mode=0o700, parents=True, exist_ok=True)
    manage(monitor_environ(data), "migrate", "--noinput", "-v", "0")
    return data


def copy_migrated(template: Path, data: Path) -> Path:
    """`data` made a copy of the migrated data directory `template` (its database and secret
    key), as if `migrate` had run there. `data` must not exist yet."""
    shutil.copytree(template, data)
    return data


def copy_database(template: Path, database: Path) -> Path:
    """Only the migrated SQLite database of `template`, copied to the file `database`, for a
    test that names its database file (CLUSTERWATCH_DATABASE_URL=sqlite:///...) itself."""
    database.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    shutil.copyfile(template / DATABASE, database)
    return database
