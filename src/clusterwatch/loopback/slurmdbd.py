"""Slurm accounting for the loopback cluster: a private MariaDB and slurmdbd, as Debian runs them.

`SlurmCluster(accounting=True)` (loopback/slurm.py) starts this between munged and slurmctld,
so `sacct` and `sacctmgr` answer and jobs land in a real `slurm_acct_db`:

    check_prerequisites(accounting=True)     # MissingComponent / SlurmUnavailable
    with SlurmCluster(accounting=True) as cluster:
        accounting = cluster.accounting          # this module's SlurmAccounting
        accounting.add_user("alice", "physics")  # Unix account + association (default account)
        jobid = cluster.submit(script, user="alice", mem="8G", cpus_per_task=2)
        cluster.wait_done(jobid)
        line = accounting.wait_accounted(jobid)  # sacct's JobID, State, Start, End, Eligible
        SacctAccounting(accounting.sacct_program)   # a sacct that needs no SLURM_CONF
        accounting.database.sql("SELECT ...", "slurm_acct_db")   # root, private socket
        accounting.database.port                 # TCP on 127.0.0.1, e.g. for the view command

Every job needs `mem=`: without it a job is given the whole node's memory and the next one
waits. Other users' jobs write their output in the shared, sticky jobs directory.

The job user (`cwjobtest`) is registered under account `cwlab` (ACCOUNT); every user belongs to
the cluster `cluster.cluster_name`, whose tables are `<cluster>_job_table` and friends.
slurmdbd runs in the foreground as slurm.conf's SlurmUser (root, like slurmctld: slurmctld
ignores association updates from any other user), reading its own slurmdbd.conf (mode 600,
owned by that user: slurmdbd refuses anything wider) from the directory of slurm.conf; it
logs in to MariaDB over TCP as `slurm` with a random password.
Start-up: about 6.5 s instead of 0.7 s on an idle 2-core machine (MariaDB's data directory
and server 2.5 s, slurmdbd's tables 0.4 s, sacctmgr's registrations 2 s), 13-22 s when the
machine is busy; the stop about 3 s more. Hence off by default.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import secrets
import subprocess
import time
from pathlib import Path
from typing import Callable, Optional, Union

from clusterwatch.loopback import supervisor
from clusterwatch.loopback.mariadb import (
    MariaDB,
    MariaDBMissing,
    binaries,
    mariadb_server,
    sql_string,
)
from clusterwatch.loopback.services import LOG_TAIL_LINES, MissingComponent, log_tail

ACCOUNT = "cwlab"
DATABASE = "slurm_acct_db"
# slurmdbd's SlurmUser must be slurmctld's (root here, slurm.conf): slurmctld takes
# association updates only from its own SlurmUser, and refused a `slurm` slurmdbd's.
DBD_USER = "root"
STORAGE_USER = "slurm"  # MariaDB's user for slurmdbd
STARTUP_TIMEOUT = 60.0
SACCT_FIELDS = "JobID,State,Start,End,Eligible"
_NO_TIME = ("", "Unknown", "None")


class SlurmAccounting:
    """MariaDB + slurmdbd of one cluster. `workdir` holds slurm.conf; `env` has SLURM_CONF."""

    def __init__(self, workdir: Path, env: dict[str, str], cluster_name: str, *,
                 find: Callable[[str], str], ensure_user: Callable[[str], pwd.struct_passwd],
                 startup_timeout: float = STARTUP_TIMEOUT) -> None:
        self.workdir = workdir
        self.env = env
        self.cluster_name = cluster_name
        self.port = supervisor.free_port()  # slurmdbd's, chosen again by each start attempt
        self.startup_timeout = startup_timeout
        self.sacct_program = str(workdir / "bin" / "sacct")
        # slurm.py's binary search and user creation, passed in: it imports this module.
        self._find = find
        self._ensure_user = ensure_user
        self._stack = contextlib.ExitStack()
        self._dbd: Optional[supervisor.Daemon] = None
        self._database: Optional[MariaDB] = None
        self._dir = workdir / "slurmdbd"

    @property
    def database(self) -> MariaDB:
        """The MariaDB holding slurm_acct_db; `.sql(script, database)` runs as root."""
        if self._database is None:
            raise RuntimeError("accounting is not started")
        return self._database

    def start(self, user: pwd.struct_passwd, write_slurm_conf: Callable[[], None]) -> None:
        """MariaDB, then slurmdbd, then the cluster, its account and `user` registered.
        `write_slurm_conf` writes slurm.conf with `self.port`, each time a port is tried."""
        dbd = self._ensure_user(DBD_USER)
        self._dir.mkdir(mode=0o700)
        os.chown(self._dir, dbd.pw_uid, dbd.pw_gid)
        self._write_sacct_wrapper()
        self._database = self._stack.enter_context(mariadb_server(self.workdir / "mariadb"))
        password = secrets.token_urlsafe(24)
        self._database.sql(
            f"CREATE DATABASE {DATABASE};"
            + "".join(f"CREATE USER '{STORAGE_USER}'@'{host}' IDENTIFIED BY "
                      f"{sql_string(password)}; GRANT ALL ON {DATABASE}.* TO "
                      f"'{STORAGE_USER}'@'{host}';" for host in ("localhost", "127.0.0.1")))

        def attempt(ports: supervisor.Ports) -> None:
            self.port = ports[0]
            self._write_conf(dbd, password)
            write_slurm_conf()
            self._start_dbd()

        supervisor.on_free_ports(1, attempt)
        self.sacctmgr("add", "cluster", self.cluster_name)
        self.add_user(user.pw_name, ACCOUNT)

    def stop(self) -> None:
        self._stop_dbd()
        self._stack.close()
        self._database = None

    def add_user(self, name: str, account: str = ACCOUNT) -> None:
        """`name` (a Unix account, created when missing) with `account` as its default,
        the account created when new. Call before submitting the user's jobs."""
        self._ensure_user(name)
        # Their jobs write output beside the job user's: shared like /tmp (sticky).
        (self.workdir / "jobs").chmod(0o1777)
        known = self.sacctmgr("-n", "-P", "list", "account", account, "format=Account")
        if account not in known.split():
            self.sacctmgr("add", "account", account, f"Cluster={self.cluster_name}")
        self.sacctmgr("add", "user", name, f"Account={account}", f"DefaultAccount={account}",
                      f"Cluster={self.cluster_name}")

    def sacctmgr(self, *args: str) -> str:
        """sacctmgr -i (no questions) against this cluster's slurmdbd; its output."""
        done = subprocess.run([self._find("sacctmgr"), "-i", *args], env=self.env,
                              capture_output=True, text=True, timeout=30, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"sacctmgr {' '.join(args)} failed ({done.returncode}): "
                               f"{done.stderr.strip() or done.stdout.strip()}")
        return done.stdout

    def sacct_line(self, jobid: Union[int, str]) -> Optional[dict[str, str]]:
        """The job's allocation line as sacct shows it now (SACCT_FIELDS)."""
        done = subprocess.run(
            [self.sacct_program, "-n", "-P", "-X", f"--format={SACCT_FIELDS}", "-j", str(jobid)],
            capture_output=True, text=True, timeout=30, check=False)
        for line in done.stdout.splitlines():
            values = dict(zip(SACCT_FIELDS.split(","), line.split("|")))
            # An array's id lists its tasks (`123_1`, `123_2`): the first is the job's line.
            if values.get("JobID") == str(jobid) or values.get("JobID", "").startswith(
                    f"{jobid}_"):
                return values
        return None

    def wait_accounted(self, jobid: Union[int, str], *, ended: bool = True,
                       timeout: float = 30.0) -> dict[str, str]:
        """The job's sacct line once slurmdbd has it whole (with `ended`: its end too).

        slurmctld sends job records to slurmdbd a moment after scontrol shows the state, and
        a short job's row is written twice: first without its eligible time (so sacct's
        time windows, `-S`, miss it) and its uid (0), completed a second later.
        """
        deadline = time.monotonic() + timeout
        while True:
            values = self.sacct_line(jobid)
            if values is not None and values.get("Eligible") not in _NO_TIME and (
                    not ended or values.get("End") not in _NO_TIME):
                return values
            if time.monotonic() >= deadline:
                raise AssertionError(f"job {jobid} not in accounting within {timeout:g} s "
                                     f"(sacct: {values})\n{self.log_tail()}")
            time.sleep(0.2)

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        return f"--- slurmdbd ---\n{log_tail(self._dir / 'slurmdbd.log', lines)}"

    # --- start and stop ----------------------------------------------------------------

    def _write_conf(self, dbd: pwd.struct_passwd, password: str) -> None:
        path = self.workdir / "slurmdbd.conf"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(slurmdbd_conf(
                munge_socket=self.workdir / "munge" / "munge.socket", port=self.port,
                run_dir=self._dir, user=dbd.pw_name, storage_port=self.database.port,
                storage_password=password))
        os.chown(path, dbd.pw_uid, dbd.pw_gid)
        path.chmod(0o600)

    def _write_sacct_wrapper(self) -> None:
        # For CLUSTERWATCH_SACCT: the monitor runs sacct without this cluster's SLURM_CONF.
        wrapper = Path(self.sacct_program)
        wrapper.parent.mkdir(mode=0o755)
        wrapper.write_text(f"#!/bin/sh\nSLURM_CONF={self.env['SLURM_CONF']} exec "
                           f"{self._find('sacct')} \"$@\"\n", encoding="utf-8")
        wrapper.chmod(0o755)

    def _start_dbd(self) -> None:
        self._dbd = supervisor.spawn(
            "slurmdbd", [self._find("slurmdbd"), "-D"], self._dir.parent / "log" / "slurmdbd.out",
            ports=(self.port,), own_logs=[self._dir / "slurmdbd.log"], env=self.env,
            cwd=self.workdir)
        supervisor.await_ready(self._dbd, _SacctmgrAnswers(self._find("sacctmgr"), self.env),
                               self.startup_timeout, interval=0.2, log_tail=self.log_tail)

    def _stop_dbd(self) -> None:
        if self._dbd is not None:
            self._dbd.stop()
            self._dbd = None


class _SacctmgrAnswers(supervisor.Probe):
    """`sacctmgr list cluster` gets an answer from slurmdbd."""

    def __init__(self, sacctmgr: str, env: dict[str, str]) -> None:
        super().__init__(failure="no answer to sacctmgr")
        self.sacctmgr = sacctmgr
        self.env = env

    def check(self) -> bool:
        try:
            done = subprocess.run([self.sacctmgr, "-n", "list", "cluster"], env=self.env,
                                  capture_output=True, text=True, timeout=30, check=False)
        except subprocess.TimeoutExpired:
            self.last = "it said nothing within 30 s"
            return False
        self.last = f"it said: {done.stderr.strip()[-300:]}"
        return done.returncode == 0


def slurmdbd_conf(*, munge_socket: Path, port: int, run_dir: Path, user: str,
                  storage_port: int, storage_password: str) -> str:
    return f"""\
AuthType=auth/munge
AuthInfo=socket={munge_socket}
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort={port}
SlurmUser={user}
LogFile={run_dir / 'slurmdbd.log'}
PidFile={run_dir / 'slurmdbd.pid'}
DebugLevel=info
StorageType=accounting_storage/mysql
# TCP to the private MariaDB: slurmdbd.conf has no socket setting.
StorageHost=127.0.0.1
StoragePort={storage_port}
StorageUser={STORAGE_USER}
StoragePass={storage_password}
StorageLoc={DATABASE}
"""


def check_accounting_binaries(find: Callable[[str], str]) -> None:
    """MissingComponent (a failure under CI=true) when slurmdbd, its clients or MariaDB lack."""
    for name in ("slurmdbd", "sacctmgr", "sacct"):
        find(name)
    try:
        binaries()
    except MariaDBMissing as missing:
        raise MissingComponent("mariadbd", str(missing).split("; ", 1)[-1]) from None
