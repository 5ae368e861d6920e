"""Decoding a MUNGE credential with `unmunge`: what munged says of it, read as unmunge(1)
documents it.

The credential goes to unmunge on stdin (never argv, which every process on the host can
read), with `--numeric` metadata on stdout and the payload discarded (its LENGTH is in the
metadata). unmunge's exit status is munge_decode()'s munge_err_t; munged decides expiry,
rewinding and replay (it keeps the replay cache: a credential decoded once is refused the
next time), so none of that is judged here, only read. A status that describes the
credential is `CredentialRefused` (the asker's fault, 403); one that describes this host
(unmunge missing, munged down, a timeout, an answer that cannot be read) is
`MungeUnavailable` (503). Messages are one line and never hold the credential.

No Django: the reading (`read_answer`) is pure, the run (`decode`) is a small adapter.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Optional

DEFAULT_TIMEOUT_S = 5.0
_DRAIN_S = 1.0  # after the kill at the deadline: what is left of the output, if it comes
_ENVIRONMENT_PATH = "/usr/local/bin:/usr/bin:/bin"

# munge_err_t (munge.h) as unmunge's exit status: what each means for the asker. The
# statuses that are about this host, not the credential, are in UNAVAILABLE below.
REFUSED: Mapping[int, str] = {
    2: "invalid argument",
    3: "longer than munged accepts",
    4: "too large to decode (buffer overflow)",
    8: "not a MUNGE credential (invalid format)",
    9: "of a MUNGE version this host does not read",
    10: "encrypted with a cipher this host does not know",
    11: "signed with a MAC this host does not know",
    12: "compressed in a way this host does not know",
    13: "of another security realm",
    14: "invalid: not encoded with this cluster's MUNGE key",
    15: "expired: make a new one (munge -n)",
    16: "rewound: encoded in the future (the clocks of the two hosts differ)",
    17: "replayed: a credential is good for one request only",
    18: "unauthorized: restricted to another user or group than this monitor's",
}
UNAVAILABLE: Mapping[int, str] = {
    1: "munged reported an internal error",
    5: "munged is out of memory",
    6: "munged is not running, or its socket cannot be reached",
    7: "munged did not answer in time",
}


class CredentialRefused(Exception):
    """The credential proves nothing: munged refused it, or it is not one this monitor takes
    (a payload, no user id). One line, never the credential."""


class MungeUnavailable(Exception):
    """This host cannot decode credentials now (unmunge or munged); one line."""


@dataclass(frozen=True)
class Decoded:
    """What a valid credential proves: who encoded it."""

    uid: int
    gid: int


def read_answer(returncode: int, stdout: bytes) -> Decoded:
    """The decoded credential from unmunge's exit status and its `--numeric` metadata, or
    CredentialRefused / MungeUnavailable. The exit status and the STATUS line must agree:
    unmunge prints the metadata of a replayed or expired credential too, UID included, and
    none of it means anything then."""
    metadata = parse_metadata(stdout)
    status_text = metadata.get("STATUS")
    status = _integer(status_text) if status_text is not None else returncode
    if status is None or returncode < 0:
        raise MungeUnavailable(_unreadable(returncode))
    if returncode != 0 or status != 0:
        raise _failure(returncode if returncode != 0 else status)
    uid, gid, length = (_integer(metadata.get(key)) for key in ("UID", "GID", "LENGTH"))
    if uid is None or gid is None or length is None:
        raise MungeUnavailable("unmunge's answer could not be read (no UID, GID or LENGTH)")
    if length != 0:
        # `munge -n` encodes no payload; one with a payload was made for something else.
        raise CredentialRefused("MUNGE credential refused: it carries a payload (make it with "
                                "munge -n)")
    return Decoded(uid=uid, gid=gid)


def parse_metadata(stdout: bytes) -> dict[str, str]:
    """unmunge's `KEY: value` lines up to the first blank one (the payload follows it)."""
    metadata: dict[str, str] = {}
    for line in stdout.decode("utf-8", "replace").splitlines():
        if not line.strip():
            break
        key, colon, value = line.partition(":")
        if colon and key.strip().isupper():
            metadata.setdefault(key.strip(), value.strip())
    return metadata


def decode(credential: str, *, program: str = "unmunge", socket: Optional[str] = None,
           timeout_s: float = DEFAULT_TIMEOUT_S,
           environ: Optional[Mapping[str, str]] = None) -> Decoded:
    """Runs `program` on `credential` (stdin) within `timeout_s`; read_answer's result.

    A session of its own, so that the deadline ends the whole group: a wrapper's children
    would otherwise keep the pipes open past it. `environ` (default: PATH alone, C locale)
    is all the program sees of the monitor's environment."""
    argv = [program, "--numeric", "--output=/dev/null"]
    if socket:
        argv.append(f"--socket={socket}")
    env = dict(environ) if environ is not None else {
        "PATH": os.environ.get("PATH", _ENVIRONMENT_PATH), "LC_ALL": "C"}
    try:
        process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=subprocess.DEVNULL, env=env,
                                   start_new_session=True)
    except FileNotFoundError:
        raise MungeUnavailable(f"the unmunge program is not installed here ({program!r} "
                               "not found)") from None
    except PermissionError:
        raise MungeUnavailable(f"the unmunge program {program!r} is not executable") from None
    try:
        stdout, _ = process.communicate((credential + "\n").encode("ascii"),
                                        timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill(process)
        raise MungeUnavailable(f"unmunge gave no answer within {timeout_s:g} s") from None
    except BrokenPipeError:  # it exited without reading: its status says why
        process.wait()
        stdout = b""
    return read_answer(process.returncode, stdout)


def _kill(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.communicate(timeout=_DRAIN_S)


def _failure(status: int) -> Exception:
    if status in UNAVAILABLE:
        return MungeUnavailable(f"{UNAVAILABLE[status]} (unmunge status {status})")
    if status in REFUSED:
        return CredentialRefused(f"MUNGE credential refused: {REFUSED[status]}")
    if status == 126 or status == 127:  # the shell's "cannot run" and "not found"
        return MungeUnavailable(f"unmunge could not be run (exit status {status})")
    return CredentialRefused(f"MUNGE credential refused (unmunge status {status})")


def _unreadable(returncode: int) -> str:
    if returncode < 0:
        return f"unmunge was killed by signal {-returncode}"
    return "unmunge's answer could not be read (its STATUS is not a number)"


def _integer(text: Optional[str]) -> Optional[int]:
    if text is None or not text.isascii() or not text.isdigit():
        return None
    return int(text)
