"""A private OpenLDAP server (Debian's slapd) on 127.0.0.1, for the LDAP login tests.

`slapd_server(workdir)` writes a slapd.conf (mdb backend, base dc=example,dc=org), loads a
directory with slapadd before the server starts (no network round trips): people in
ou=people (inetOrgPerson + posixAccount, passwords hashed by slappasswd), a service account
in ou=services that the monitor may bind as, and two staff groups in ou=groups, one
groupOfNames (`cn=staff`) and one posixGroup (`cn=operators`). Anonymous clients may only
bind; an authenticated one reads everything but passwords, as on a typical site. slapd runs
in the foreground (`-d`) on a free loopback port, optionally also with ldaps:// from a given
certificate, and is stopped when the block ends (SIGCONT, SIGTERM, then SIGKILL): started
and stopped by the harness's supervisor (loopback/supervisor.py).

`Slapd.paused()` stops the process (SIGSTOP) for a block: the kernel still accepts
connections but nothing answers, which is what a hung directory server looks like.

AppArmor confines /usr/sbin/slapd on Ubuntu (and on Debian when a profile is installed) to
/etc/ldap, /var/lib/ldap and the like, so it could not read a configuration in a temporary
directory; when the kernel enforces a profile for slapd, a copy of the binary in the work
directory is run instead, which no profile names.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from clusterwatch.loopback import supervisor
from clusterwatch.loopback.services import LOOPBACK, MissingComponent, log_tail
from clusterwatch.loopback.slapd_directory import (
    BASE,
    GROUPS,
    PEOPLE,
    SERVICE_DN,
    DirectoryUser,
    default_users,
    directory_ldif,
    slapd_conf,
)

__all__ = ["BASE", "GROUPS", "PEOPLE", "SERVICE_DN", "DirectoryUser", "Slapd", "default_users",
           "slapd_server"]

STARTUP_TIMEOUT = 20.0
PAUSE_TIMEOUT = 30.0  # for every thread to stop after SIGSTOP: a deadline, not a wait
STOP_TIMEOUT = 10.0
_SEARCH = (os.environ.get("PATH", ""), "/usr/sbin", "/usr/local/sbin", "/usr/libexec/openldap")
_APPARMOR_PROFILES = Path("/sys/kernel/security/apparmor/profiles")
INSTALL_HINT = "install it with: sudo apt-get install --no-install-recommends slapd ldap-utils"
# An anonymous LDAPv3 bind request (message 1): the readiness probe, no client library needed.
_ANONYMOUS_BIND = bytes.fromhex("300c020101600702010304008000")


@dataclass(frozen=True)
class TlsFiles:
    """A server certificate and key in PEM; the ldaps:// listener serves them."""

    cert: Path
    key: Path


@dataclass(frozen=True)
class Slapd:
    """A running slapd: `uri` is ldap://127.0.0.1:PORT (`ldaps_uri` when TLS was given)."""

    uri: str
    ldaps_uri: Optional[str]
    process: subprocess.Popen[bytes]
    users: tuple[DirectoryUser, ...]
    service_password: str
    log_path: Path
    base: str = BASE
    people: str = PEOPLE
    service_dn: str = SERVICE_DN
    staff_group: str = f"cn=staff,{GROUPS}"  # groupOfNames
    posix_staff_group: str = f"cn=operators,{GROUPS}"  # posixGroup, memberUid

    def user(self, uid: str) -> DirectoryUser:
        return next(user for user in self.users if user.uid == uid)

    def user_dn(self, uid: str) -> str:
        return f"uid={uid},{PEOPLE}"

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """slapd stopped (SIGSTOP) for the block: connections are accepted, never answered.
        The block begins once every thread has stopped: kill() returns before that, and on a
        loaded machine a thread that had not yet seen the signal could still answer."""
        self.process.send_signal(signal.SIGSTOP)
        try:
            _await_stopped(self.process.pid, PAUSE_TIMEOUT)
            yield
        finally:
            self.process.send_signal(signal.SIGCONT)

    def log_tail(self, lines: int = 40) -> str:
        return log_tail(self.log_path, lines)


def _await_stopped(pid: int, timeout: float) -> None:
    """Until every thread of `pid` is in the stopped state (`T` in /proc/PID/task/TID/stat)."""
    deadline = time.monotonic() + timeout
    while True:
        states = set()
        for stat in Path(f"/proc/{pid}/task").glob("*/stat"):
            with contextlib.suppress(OSError):  # a thread that has just ended
                states.add(stat.read_text(encoding="ascii").rpartition(")")[2].split()[0])
        if states == {"T"}:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"slapd {pid} did not stop within {timeout:.0f} s of SIGSTOP "
                               f"(thread states {sorted(states)})")
        time.sleep(0.01)


def find_binary(name: str) -> str:
    """Path of `name` on PATH or in the sbin directories (not on a user's PATH on Debian)."""
    for directory in _SEARCH:
        found = shutil.which(name, path=directory) if directory else None
        if found:
            return found
    raise MissingComponent(name, INSTALL_HINT)


def apparmor_confines(binary: str, profiles: Optional[str] = None) -> bool:
    """True when an enforced AppArmor profile is attached to `binary`'s path.

    `profiles`: the kernel's profile list (default: read from securityfs; absent means no
    AppArmor), lines such as `/usr/sbin/slapd (enforce)`.
    """
    if profiles is None:
        try:
            profiles = _APPARMOR_PROFILES.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return False
    real = os.path.realpath(binary)
    for line in profiles.splitlines():
        name, _, mode = line.rpartition(" ")
        if mode == "(enforce)" and name in (binary, real, "slapd"):
            return True
    return False


@contextlib.contextmanager
def slapd_server(workdir: Path, *, users: Optional[Sequence[DirectoryUser]] = None,
                 tls: Optional[TlsFiles] = None, debug: str = "none") -> Iterator[Slapd]:
    """slapd serving a fresh directory under `workdir` (made if absent) until the block ends.

    `users`: the people (default: `default_users()`, fresh random passwords). `tls`: also
    listen on ldaps:// with that certificate. `debug`: slapd's -d level for its log
    (`workdir/slapd.log`); "none" logs errors only, "stats" every operation.
    """
    binary = find_binary("slapd")
    people = tuple(users if users is not None else default_users())
    workdir = Path(workdir).absolute()
    (workdir / "data").mkdir(mode=0o700, parents=True, exist_ok=True)
    service_password = secrets.token_urlsafe(16)
    hashes = {user.uid: _hash(user.password, workdir) for user in people}
    config = workdir / "slapd.conf"
    config.write_text(slapd_conf(workdir, tls), encoding="utf-8")
    ldif = workdir / "directory.ldif"
    ldif.write_text(directory_ldif(people, hashes, _hash(service_password, workdir)),
                    encoding="utf-8")
    os.chmod(ldif, 0o600)
    _run([find_binary("slapadd"), "-q", "-f", str(config), "-l", str(ldif)])
    if apparmor_confines(binary):
        binary = shutil.copy2(binary, str(workdir / "slapd"))
    log_path = workdir / "slapd.log"

    def command(ports: supervisor.Ports) -> list[str]:
        return [binary, "-d", debug, "-h", " ".join(_urls(ports)), "-f", str(config)]

    daemon = supervisor.start("slapd", command, log_path, lambda ports: _AnswersBind(ports[0]),
                              ports=2 if tls else 1, startup_timeout=STARTUP_TIMEOUT,
                              stop_timeout=STOP_TIMEOUT)
    urls = [url.rstrip("/") for url in _urls(daemon.ports)]
    with supervisor.running(daemon):
        yield Slapd(uri=urls[0], ldaps_uri=urls[1] if tls else None, process=daemon.process,
                    users=people, service_password=service_password, log_path=log_path)


def _urls(ports: supervisor.Ports) -> list[str]:
    """ldap:// on the first port, ldaps:// on the second when there is one."""
    return [f"{scheme}://{LOOPBACK}:{port}/" for scheme, port in zip(("ldap", "ldaps"), ports)]


def _hash(password: str, workdir: Path) -> str:
    """slappasswd's {SSHA} of `password`, handed over in a private file, never in argv."""
    secret = workdir / f".secret-{secrets.token_hex(4)}"
    fd = os.open(secret, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(password)  # no newline: -T hashes the file's bytes as they are
        return _run([find_binary("slappasswd"), "-h", "{SSHA}", "-T", str(secret)]).strip()
    finally:
        secret.unlink()


def _run(command: list[str]) -> str:
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False,
                          stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise RuntimeError(f"{os.path.basename(command[0])} failed with status "
                           f"{done.returncode}: {(done.stdout + done.stderr).strip()[-2000:]}")
    return done.stdout


class _AnswersBind(supervisor.Probe):
    """slapd answers an anonymous bind on `port` with success."""

    def __init__(self, port: int) -> None:
        super().__init__(failure=f"no answer to an anonymous bind on port {port}")
        self.port = port

    def check(self) -> bool:
        with socket.create_connection((LOOPBACK, self.port), timeout=2.0) as connection:
            connection.sendall(_ANONYMOUS_BIND)
            answer = connection.recv(64)
        # A BindResponse (tag 0x61) whose resultCode (ENUMERATED 0x0a 0x01) is success.
        return b"\x61" in answer and b"\x0a\x01\x00" in answer
