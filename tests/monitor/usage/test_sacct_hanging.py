"""A sacct that hangs is given up within its timeout even when a descendant left its process
group (a wrapper's `setsid` helper, a daemonizing ssh master) still holds its output open:
killing the group ends the program, and the reader then stops waiting for pipes that the
escaped process would keep open for as long as it lives."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from clusterwatch.monitor.usage.accounting.interface import AccountingFailed
from clusterwatch.monitor.usage.accounting.sacct import SacctAccounting


def test_it_gives_up_within_its_timeout_when_a_descendant_escaped_its_group(
        tmp_path: Path) -> None:
    pid_file = tmp_path / "escaped.pid"
    program = tmp_path / "sacct"
    program.write_text("#!/bin/sh\n"
                       f"setsid sh -c 'echo $$ > {pid_file}; exec sleep 60' &\n"
                       "sleep 60\n")
    program.chmod(0o755)
    started = time.monotonic()
    try:
        with pytest.raises(AccountingFailed, match=r"no answer within 0\.5 s"):
            SacctAccounting(str(program), timeout_s=0.5).job("4242")
        assert time.monotonic() - started < 5
    finally:
        if pid_file.exists() and pid_file.read_text().strip():
            os.kill(int(pid_file.read_text()), signal.SIGKILL)
