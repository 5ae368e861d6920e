"""usage_watch's optional site hook: a program run once for each (job, rule) when the rule is
first found broken, with the job id and the rule as its two arguments (a site may post to a
chat, open a ticket, or hold the job). Off unless CLUSTERWATCH_USAGE_WATCH_HOOK names it.

Never through a shell (argv as given: a job id is digits and a rule a word, but no value
reaches a shell either way), with stdin closed, in a session of its own, within
CLUSTERWATCH_USAGE_WATCH_HOOK_TIMEOUT_S seconds (default 10): at the deadline its whole group
is killed. Its environment is the monitor's less the secret key (accounting_source says why).
A hook that fails or overruns is one line of the run's output; it is not run again. Of what it
writes on stderr only the last STDERR_KEPT bytes are kept (its last line is quoted): a hook
that writes without end holds no more of the run's memory than that, and is killed at its
deadline as one that hangs.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from clusterwatch.monitor.core import prefixed_settings
from clusterwatch.monitor.core.secrets import SettingError
from clusterwatch.monitor.usage.accounting_source import sacct_environment

HOOK = "CLUSTERWATCH_USAGE_WATCH_HOOK"
HOOK_TIMEOUT = "CLUSTERWATCH_USAGE_WATCH_HOOK_TIMEOUT_S"
DEFAULT_TIMEOUT_S = 10.0
MAX_TIMEOUT_S = 300.0  # the timer runs every 10 minutes: hooks must not fill them
_QUOTED = 200
STDERR_KEPT = 64 * 1024


@dataclass(frozen=True)
class Hook:
    program: str
    timeout_s: float


def hook_from(environ: Mapping[str, str]) -> Optional[Hook]:
    """The configured hook, None when off; SettingError (exit 78) for a program that is not
    an absolute path to an executable file, or a bad timeout."""
    program = environ.get(HOOK, "").strip()
    if not program:
        return None
    path = Path(program)
    if not path.is_absolute() or not path.is_file() or not os.access(path, os.X_OK):
        raise SettingError(f"{HOOK} must be the absolute path of an executable program, "
                           f"not {program[:80]!r}")
    timeout = prefixed_settings.seconds(environ, HOOK_TIMEOUT, DEFAULT_TIMEOUT_S,
                                        most=MAX_TIMEOUT_S)
    return Hook(program, timeout)


def run_hook(hook: Hook, jobid: str, rule: str,
             environ: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """Run the hook for (job, rule); None when it exited 0, else why not, in one line."""
    try:
        process = subprocess.Popen(
            [hook.program, jobid, rule], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, start_new_session=True,
            env=sacct_environment(os.environ if environ is None else environ))
    except OSError as exc:
        return f"the hook could not be started: {exc.strerror or type(exc).__name__}"
    stderr = process.stderr
    assert stderr is not None  # stderr=PIPE
    with stderr:
        err, finished = _tail_until_exit(process, stderr.fileno(),
                                         time.monotonic() + hook.timeout_s)
    if not finished:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        return f"the hook gave no answer within {hook.timeout_s:g} s and was killed"
    if process.returncode == 0:
        return None
    lines = [line.strip() for line in err.decode("utf-8", "replace").splitlines() if line.strip()]
    said = f": {lines[-1][:_QUOTED]}" if lines else ""
    return f"the hook failed with exit status {process.returncode}{said}"


def _tail_until_exit(process: subprocess.Popen[bytes], fd: int,
                     deadline: float) -> tuple[bytes, bool]:
    """The last STDERR_KEPT bytes the hook wrote on `fd` (its stderr), and whether it closed
    it and exited by `deadline`."""
    tail = b""
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return tail, False
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        tail = (tail + chunk)[-STDERR_KEPT:]
    try:
        process.wait(timeout=max(deadline - time.monotonic(), 0.0))
    except subprocess.TimeoutExpired:
        return tail, False
    return tail, True
