"""Unreadable files for tests that run as root (CI does): root reads a mode-000 file, so the
reading runs in a child process as `nobody` (setpriv), which cannot. As another user the
child runs as that user, for whom mode 000 is unreadable already."""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.components import need_binary

NOBODY = "65534"


def unreadable_file(content: bytes, name: str) -> Path:
    """A mode-000 file in a fresh directory anyone may enter (pytest's tmp_path is root's
    mode-700 directory, where `nobody` would be refused by the directory, not the file)."""
    folder = Path(tempfile.mkdtemp(prefix="cw-unreadable-"))
    folder.chmod(0o755)
    atexit.register(shutil.rmtree, folder, True)
    path = folder / name
    path.write_bytes(content)
    path.chmod(0)
    return path


def run_python(code: str) -> str:
    """`code`'s standard output, run by this interpreter as a user for whom mode 000 means
    unreadable; a failing child fails the test with its stderr."""
    command = [sys.executable, "-c", code]
    if os.geteuid() == 0:
        command = [need_binary("setpriv"), f"--reuid={NOBODY}", f"--regid={NOBODY}",
                   "--clear-groups", *command]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False,
                          cwd="/")
    assert done.returncode == 0, done.stderr
    return done.stdout
