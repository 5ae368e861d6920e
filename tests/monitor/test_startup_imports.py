"""What the monitor imports as it starts: a management command (cron's, an operator's) none
of the drawing libraries, whose half second of import every command paid before; a
gunicorn worker all of them, so that no first plot waits for it, and after matplotlib was
given the monitor's own directory."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.monitor_console import CLUSTERWATCH, console_environ, copy_migrated

DRAWING = ("matplotlib", "reportlab", "numpy")

pytestmark = pytest.mark.integration


def test_a_management_command_starts_without_the_drawing_libraries(
        migrated_sqlite: Path, tmp_path: Path) -> None:
    data = copy_migrated(migrated_sqlite, tmp_path / "data")
    environ = console_environ(data, {"PYTHONPROFILEIMPORTTIME": "1"})
    done = subprocess.run([CLUSTERWATCH, "monitor", "list_harvesters"], env=environ,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()
                if line.startswith("import time:")}
    assert "clusterwatch.monitor.usage.web.render_views" in imported  # every URL was loaded
    assert not {name for name in imported if name.split(".")[0] in DRAWING}


def test_a_gunicorn_worker_imports_them_as_it_starts(migrated_sqlite: Path,
                                                     tmp_path: Path) -> None:
    data = copy_migrated(migrated_sqlite, tmp_path / "data")
    probe = ("import os, sys\n"
             "import clusterwatch.monitor.site.wsgi\n"  # what each worker imports
             "print(sorted(name for name in sys.modules if name in "
             f"{DRAWING!r} or name.endswith('rendering.rendered')))\n"
             "print(os.environ.get('MPLCONFIGDIR'))\n")
    environ = console_environ(data)
    environ.pop("MPLCONFIGDIR", None)  # this process's own (one set by the service wins)
    done = subprocess.run([sys.executable, "-c", probe], env=environ,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    modules, directory = done.stdout.splitlines()
    assert modules == str(sorted([*DRAWING, "clusterwatch.monitor.usage.rendering.rendered"]))
    assert directory == str(data / "matplotlib")  # chosen before matplotlib was imported
