"""The login node's side of MUNGE authentication (clusterwatch.monitor.usage.terminal.
munge_credential): `munge -n` against the session's real munged, and each way it fails in
one line (a RunError: exit 1 for a command). The monitor's side, taking what it makes, is
tests/monitor/usage/test_munge_auth.py."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from clusterwatch.errors import RunError
from clusterwatch.loopback.munge import LoopbackMunge
from clusterwatch.monitor.usage.terminal.munge_credential import (
    MungeUnavailable,
    make_credential,
)


def stand_in(tmp_path: Path, body: str) -> str:
    program = tmp_path / "munge"
    program.write_text("#!/bin/sh\n" + body)
    program.chmod(0o755)
    return str(program)


def test_it_makes_a_credential_that_munged_decodes(munged: LoopbackMunge) -> None:
    credential = make_credential(socket=str(munged.socket))
    assert credential.startswith("MUNGE:") and credential.endswith(":")
    decoded = subprocess.run([munged.unmunge, f"--socket={munged.socket}", "--numeric"],
                             input=credential.encode(), capture_output=True, timeout=10,
                             check=False)
    assert decoded.returncode == 0 and b"LENGTH:          0" in decoded.stdout


def test_munged_down_is_one_line_saying_so(munged: LoopbackMunge, tmp_path: Path) -> None:
    with pytest.raises(MungeUnavailable) as failed:
        make_credential(munged.munge, socket=str(tmp_path / "no.socket"))
    message = str(failed.value)
    assert message.startswith("munged is not running or cannot be reached: ")
    assert "\n" not in message and isinstance(failed.value, RunError)


def test_a_missing_munge_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(MungeUnavailable, match=r"^MUNGE is not installed here: no program"):
        make_credential(str(tmp_path / "munge"))


def test_a_hanging_munge_is_given_up_at_the_deadline(tmp_path: Path) -> None:
    program = stand_in(tmp_path, "sleep 60 &\nsleep 60\n")
    started = time.monotonic()
    with pytest.raises(MungeUnavailable, match=r"no credential within 0\.3 s"):
        make_credential(program, timeout_s=0.3)
    assert time.monotonic() - started < 3


def test_output_that_is_no_credential_is_refused(tmp_path: Path) -> None:
    with pytest.raises(MungeUnavailable, match="printed no MUNGE credential"):
        make_credential(stand_in(tmp_path, "echo 'MUNGE:not base64!:'\n"))
    with pytest.raises(MungeUnavailable, match=r"exit status 3: munge: Error: bad"):
        make_credential(stand_in(tmp_path, "echo 'munge: Error: bad' >&2; exit 3\n"))


def test_it_imports_no_django() -> None:
    code = ("import sys; sys.modules['django'] = None\n"
            "import clusterwatch.monitor.usage.terminal.munge_credential\n"
            "print(sorted(m for m in sys.modules if m.startswith('django')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['django']"  # the blocked entry only
