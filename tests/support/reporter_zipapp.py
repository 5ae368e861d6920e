"""The reporter's zipapp as an operator builds it and as cron runs it.

`build_zipapp` runs the installed `clusterwatch reporter build` (the console script beside
this interpreter); the suite builds it once per run (the session fixture `zipapp` in
tests/conftest.py) and every test runs that one file, which none of them changes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

CONSOLE_SCRIPT = Path(sys.executable).with_name("clusterwatch")
# The harvester hosts' interpreter: the system python3, not this virtual environment's.
SYSTEM_PYTHON = shutil.which("python3", path="/usr/bin:/bin") or "python3"


def build_zipapp(directory: Path) -> Path:
    """`clusterwatch reporter build --output <directory>/harvester-reporter.pyz`."""
    assert CONSOLE_SCRIPT.exists(), "the console script is missing: pip install -e '.[dev]'"
    app = directory / "harvester-reporter.pyz"
    built = subprocess.run([str(CONSOLE_SCRIPT), "reporter", "build", "--output", str(app)],
                           capture_output=True, text=True, check=False, timeout=60)
    assert built.returncode == 0, built.stderr
    return app


def run_app(app: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The zipapp run directly, as the crontab line `~/.local/bin/harvester-reporter.pyz`."""
    environ = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp")}
    return subprocess.run([str(app), *args], capture_output=True, text=True, check=False,
                          timeout=60, env=environ, stdin=subprocess.DEVNULL)


def run_app_on_host(app: Path, hostname: str, home: Path,
                    *args: str) -> subprocess.CompletedProcess[str]:
    """The zipapp run as cron runs it on the host `hostname` whose home is `home`: in a UTS
    namespace of its own (`unshare --uts --map-root-user`), so the reporter's
    `socket.gethostname()` is that host's, with nothing in the reporter replaced."""
    unshare = shutil.which("unshare")
    assert unshare is not None, "unshare missing: check host_namespaces() first"
    environ = {"PATH": os.environ["PATH"], "HOME": str(home)}
    return subprocess.run(
        [unshare, "--uts", "--map-root-user", "sh", "-c", 'hostname "$1" && shift && exec "$@"',
         "sh", hostname, str(app), *args],
        capture_output=True, text=True, check=False, timeout=60, env=environ,
        stdin=subprocess.DEVNULL)


def host_namespaces() -> str | None:
    """Why a test cannot give a run a hostname of its own (None when it can)."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return "unshare (util-linux) is not installed: apt-get install util-linux"
    probe = subprocess.run([unshare, "--uts", "--map-root-user", "hostname", "probe"],
                           capture_output=True, text=True, check=False, timeout=30)
    if probe.returncode != 0:
        return f"no user and UTS namespaces here ({probe.stderr.strip()})"
    return None
