"""A private `munged` on loopback, for the tests of MUNGE authentication.

`LoopbackMunge` makes a temporary directory (searchable by all: munged insists that every
directory above its socket is), writes a key of its own there (1024 random bits from
/dev/urandom, what mungekey writes, mode 400, owned by the running user, who runs munged),
starts munged in the foreground through the harness's supervisor with its socket, pid, log
and seed files in that directory, and is ready once `munge -n --socket S` gives a
credential. It stops munged and removes the directory however the block ends (an atexit
hook stops a munged nobody stopped).

`credential(...)` encodes one the way a login node's `munge` does, with the options a test
needs: `uid`/`gid` (as another user: munge's --uid/--gid, which need root or CAP_SETUID),
`ttl`, a payload, a decode restriction. munged keeps the replay cache: a credential decoded
once through this socket is refused the next time.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Optional

from clusterwatch.loopback import supervisor
from clusterwatch.loopback.services import STOP_TIMEOUT, MissingComponent

STARTUP_TIMEOUT = 15.0
KEY_BYTES = 128  # what mungekey writes: 1024 random bits
_SBIN = ("/usr/sbin", "/sbin", "/usr/local/sbin")  # munged is not on every user's PATH


def find_munge_binary(name: str) -> str:
    """Path of `munged`, `munge` or `unmunge`, or MissingComponent saying how to install it."""
    path = shutil.which(name) or shutil.which(name, path=os.pathsep.join(_SBIN))
    if path:
        return path
    raise MissingComponent(name, "install it with: sudo apt-get install --no-install-recommends "
                                 "munge (scripts/setup installs it)")


class LoopbackMunge:
    """munged on a socket of its own, with a key of its own; see the module's docstring."""

    def __init__(self) -> None:
        self.munged = find_munge_binary("munged")
        self.munge = find_munge_binary("munge")
        self.unmunge = find_munge_binary("unmunge")
        self.workdir: Optional[Path] = None
        self._daemon: Optional[supervisor.Daemon] = None

    @property
    def socket(self) -> Path:
        assert self.workdir is not None, "munged is not started"
        return self.workdir / "munge.socket"

    def __enter__(self) -> LoopbackMunge:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def start(self) -> None:
        self.workdir = Path(tempfile.mkdtemp(prefix="cw-munge-"))
        try:
            self.workdir.chmod(0o755)
            key = self.workdir / "munge.key"
            self._write_key(key)
            self._daemon = supervisor.spawn("munged", [
                self.munged, "--foreground", f"--socket={self.socket}",
                f"--key-file={key}", f"--pid-file={self.workdir / 'munged.pid'}",
                f"--seed-file={self.workdir / 'munged.seed'}",
                f"--log-file={self.workdir / 'munged.log'}", "--num-threads=2",
            ], self.workdir / "munged.out", cwd=self.workdir, stop_timeout=STOP_TIMEOUT)
            supervisor.await_ready(
                self._daemon, supervisor.Probe(self._encodes, "munge -n gives no credential"),
                STARTUP_TIMEOUT)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        if self._daemon is not None:
            self._daemon.stop()
            self._daemon = None
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None

    def credential(self, *, uid: Optional[int] = None, gid: Optional[int] = None,
                   ttl: Optional[int] = None, payload: Optional[str] = None,
                   restrict_uid: Optional[int] = None) -> str:
        """A new credential from this munged (`munge -n`, or the payload on stdin)."""
        argv = [self.munge, f"--socket={self.socket}"]
        if payload is None:
            argv.append("--no-input")
        for option, value in (("--uid", uid), ("--gid", gid), ("--ttl", ttl),
                              ("--restrict-uid", restrict_uid)):
            if value is not None:
                argv.append(f"{option}={value}")
        done = subprocess.run(argv, input=(payload or "").encode(), capture_output=True,
                              timeout=30, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"munge failed with status {done.returncode}: "
                               f"{done.stderr.decode(errors='replace').strip()}")
        return done.stdout.decode("ascii").strip()

    def _write_key(self, key: Path) -> None:
        fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as out, open("/dev/urandom", "rb") as random:
            out.write(random.read(KEY_BYTES))
        key.chmod(0o400)  # munged refuses a key that others may read

    def _encodes(self) -> bool:
        try:
            done = subprocess.run([self.munge, "--no-input", f"--socket={self.socket}"],
                                  capture_output=True, timeout=5, check=False)
        except subprocess.TimeoutExpired:
            return False
        return done.returncode == 0 and done.stdout.startswith(b"MUNGE:")
