"""A helper program run to completion for the loopback harness and the demos (promtool, the
reporter zipapp, `clusterwatch reporter build`): its output captured, stdin closed, one
deadline, and one exception that says what failed, with the end of its output."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence

OUTPUT_TAIL_CHARS = 2000


class ProgramFailed(Exception):
    """The program exited non-zero or ran past its deadline; the message says which."""


def run_program(command: Sequence[str], what: str,
                timeout_s: float) -> subprocess.CompletedProcess[str]:
    """Runs `command`; ProgramFailed names it as `what` unless it exits 0 in time."""
    try:
        done = subprocess.run(list(command), capture_output=True, text=True, timeout=timeout_s,
                              check=False, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise ProgramFailed(f"{what} did not finish within {timeout_s:g} s") from None
    if done.returncode != 0:
        output = (done.stdout + done.stderr).strip()[-OUTPUT_TAIL_CHARS:]
        raise ProgramFailed(f"{what} failed with status {done.returncode}:\n{output}")
    return done
