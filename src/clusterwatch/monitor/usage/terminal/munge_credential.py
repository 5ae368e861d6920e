"""A MUNGE credential for the monitor's API, made on a login node: `munge -n`.

On a Slurm cluster every host shares a MUNGE key, so the credential `munge -n` prints proves
the caller's uid to the monitor (which decodes it with unmunge and refuses a replay) with no
password or token file. It is sent as `Authorization: MUNGE <credential>`, once: a new
request needs a new one. It never goes in argv (munge writes it to stdout, read here).

No Django: `clusterwatch usage` runs on login nodes without the web stack.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
from typing import Optional

from clusterwatch.errors import RunError

DEFAULT_TIMEOUT_S = 5.0
# MUNGE's armor: the prefix, base64, the suffix (what the monitor accepts).
_CREDENTIAL_RE = re.compile(r"MUNGE:[A-Za-z0-9+/]+={0,2}:")
_STDERR_QUOTE = 200
# munge's exit statuses (munge_err_t) that mean munged cannot be reached or answered late.
_SOCKET, _TIMEOUT = 6, 7


class MungeUnavailable(RunError):
    """No credential: munge is missing, munged is down or slow, or munge failed (one line)."""


def make_credential(program: str = "munge", socket: Optional[str] = None,
                    timeout_s: float = DEFAULT_TIMEOUT_S) -> str:
    """The text of a new credential from `program -n` (`--socket` when given), within
    `timeout_s`; MungeUnavailable otherwise."""
    argv = [program, "--no-input"]
    if socket:
        argv.append(f"--socket={socket}")
    try:
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, start_new_session=True)
    except FileNotFoundError:
        raise MungeUnavailable(f"MUNGE is not installed here: no program {program!r} "
                               "(install munge, or use a usage token file)") from None
    except PermissionError:
        raise MungeUnavailable(f"the munge program {program!r} is not executable") from None
    try:
        stdout, stderr = process.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.communicate(timeout=1.0)
        raise MungeUnavailable(f"munge gave no credential within {timeout_s:g} s "
                               "(is munged running?)") from None
    if process.returncode != 0:
        raise MungeUnavailable(_failure(process.returncode, stderr))
    credential = stdout.decode("ascii", "replace").strip()
    if not _CREDENTIAL_RE.fullmatch(credential):
        raise MungeUnavailable(f"{program} printed no MUNGE credential")
    return credential


def _failure(returncode: int, stderr: bytes) -> str:
    said = _last_line(stderr)
    if returncode == _SOCKET:
        return f"munged is not running or cannot be reached: {said}"
    if returncode == _TIMEOUT:
        return f"munged did not answer in time: {said}"
    return f"munge failed with exit status {returncode}: {said}"


def _last_line(stderr: bytes) -> str:
    lines = [line.strip() for line in stderr.decode("utf-8", "replace").splitlines()
             if line.strip()]
    return lines[-1][:_STDERR_QUOTE] if lines else "(no message)"
