"""A real single-node Slurm cluster on loopback: munged, slurmctld and slurmd, for tests.

`SlurmCluster` builds everything in a private temporary directory (munge key and socket,
slurm.conf, cgroup.conf, state and spool directories, logs), starts the three daemons in the
foreground (`-F` / `-D`) as children of the caller, waits until the node is idle, and on exit
cancels the jobs, stops the daemons (SIGTERM, then SIGKILL) and removes the job cgroups that
Slurm left behind. Jobs run as an unprivileged user (`cwjobtest`, created when missing), so
that the exporter's `user` label is checked against a real name.

Job cgroups are real: with cgroup v1, Slurm creates
`<cgroup root>/<controller>/slurm_<node>/uid_<uid>/job_<id>/step_<s>/task_<t>` for cpuacct,
cpuset, memory and freezer. Needs root and cgroup v1 (`check_prerequisites` says why not).

Several clusters may run on one machine at once (two test runs, pytest-xdist workers, two
fixtures of one process): each gets its own ports, node name (so its own `slurm_<node>`
directories), range of job IDs, munge key and socket, and state, spool and log directories.
The daemons are started and stopped by the harness's supervisor (loopback/supervisor.py):
slurmctld and slurmd again on new ports when one of theirs was taken.

`accounting=True` adds a private MariaDB and slurmdbd (loopback/slurmdbd.py: `sacct` then
knows the jobs; `cluster.accounting` registers users and waits for job records). Without it
(the default, for the exporter's tests) there is no accounting at all.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Optional, Union

from clusterwatch.loopback import supervisor
from clusterwatch.loopback.services import LOG_TAIL_LINES, STOP_TIMEOUT, MissingComponent
from clusterwatch.loopback.slurm_config import (  # re-exported: the tests configure from here
    V1_CONTROLLERS,
    ClusterSettings,
    cgroup_conf,
    slurm_conf,
    v1_controllers,
)
from clusterwatch.loopback.slurmdbd import SlurmAccounting, check_accounting_binaries

DEFAULT_JOB_USER = "cwjobtest"
DEFAULT_CGROUP_ROOT = Path("/sys/fs/cgroup")
STARTUP_TIMEOUT = 60.0  # seconds until the node is idle
# Controllers Slurm's cgroup/v1 plugin uses with the plugins configured below.
TERMINAL_STATES = frozenset({
    "BOOT_FAIL", "CANCELLED", "COMPLETED", "DEADLINE", "FAILED", "NODE_FAIL",
    "OUT_OF_MEMORY", "PREEMPTED", "TIMEOUT", "PURGED",
})
_DEBIAN_PACKAGES = {
    "munged": "munge", "slurmctld": "slurmctld", "slurmd": "slurmd", "sbatch": "slurm-client",
    "srun": "slurm-client", "squeue": "slurm-client", "scontrol": "slurm-client",
    "scancel": "slurm-client", "sinfo": "slurm-client", "sacct": "slurm-client",
    "sacctmgr": "slurm-client",
}
_SBIN = ("/usr/sbin", "/sbin", "/usr/local/sbin")  # not on every user's PATH
# Jobs see only this environment (plus SLURM_*): nothing of the test runner's leaks in.
_JOB_PATH = "/usr/local/bin:/usr/bin:/bin"


class SlurmUnavailable(Exception):
    """This machine cannot run the cluster (not root, no cgroup v1): a reason to skip."""


class SlurmJobError(Exception):
    """A job ended or stalled in a way the caller did not expect; the message has its output."""


def find_binary(name: str) -> str:
    """Path of a Slurm or munge executable (also in /usr/sbin), or raise MissingComponent."""
    path = shutil.which(name) or shutil.which(name, path=os.pathsep.join(_SBIN))
    if path:
        return path
    package = _DEBIAN_PACKAGES.get(name, name)
    raise MissingComponent(
        name, f"install it with: sudo apt-get install --no-install-recommends {package} "
        "(scripts/setup installs it)")


def check_prerequisites(cgroup_root: Path = DEFAULT_CGROUP_ROOT, *,
                        accounting: bool = False) -> None:
    """Raise MissingComponent (a binary) or SlurmUnavailable (root, cgroup v1) when lacking;
    with `accounting`, slurmdbd, its clients and MariaDB are needed too."""
    for name in _DEBIAN_PACKAGES:
        find_binary(name)
    if accounting:
        check_accounting_binaries(find_binary)
    if os.geteuid() != 0:
        raise SlurmUnavailable("the Slurm cluster needs root (slurmd creates job cgroups)")
    missing = [c for c in V1_CONTROLLERS if c not in _v1_mounts(cgroup_root)]
    if missing:
        raise SlurmUnavailable(
            f"no cgroup v1 hierarchy for {', '.join(missing)} under {cgroup_root}")


def ensure_user(name: str) -> pwd.struct_passwd:
    """The account `name`, created as a system user without a home when missing."""
    try:
        return pwd.getpwnam(name)
    except KeyError:
        pass
    subprocess.run(
        [find_binary("useradd"), "--system", "--no-create-home", "--user-group",
         "--shell", "/usr/sbin/nologin", name],
        check=True, capture_output=True, text=True)
    return pwd.getpwnam(name)


class SlurmCluster:
    """A running one-node cluster; use as `with SlurmCluster() as cluster: ...`.

    `jobs_per_core`: how many jobs may share one core (the partition's OverSubscribe), so
    that a 2-core machine runs several test jobs at once. `keep_workdir` keeps configs and
    logs after the end (the path is `workdir`).
    """

    def __init__(
        self,
        *,
        job_user: str = DEFAULT_JOB_USER,
        cluster_name: str = "cwtest",
        node_name: Optional[str] = None,
        partition: str = "cw",
        cgroup_root: Path = DEFAULT_CGROUP_ROOT,
        parent_dir: Optional[Path] = None,
        jobs_per_core: int = 4,
        startup_timeout: float = STARTUP_TIMEOUT,
        keep_workdir: bool = False,
        accounting: bool = False,
    ) -> None:
        self.job_user = job_user
        self.cluster_name = cluster_name
        # Unique on the machine: the cgroup directories are slurm_<node>, shared by all
        # clusters; a second cluster of the same process gets a name of its own too.
        self._number = next(_numbers)
        suffix = f"s{self._number}" if self._number else ""
        self.node_name = node_name or f"cwn{os.getpid()}{suffix}"
        self.partition = partition
        self.cgroup_root = Path(cgroup_root)
        self.jobs_per_core = jobs_per_core
        self.startup_timeout = startup_timeout
        self.keep_workdir = keep_workdir
        self._parent_dir = parent_dir
        self.workdir = Path()
        self.conf_path = Path()
        self.jobs_dir = Path()
        self.env: dict[str, str] = {}
        self._daemons: dict[str, supervisor.Daemon] = {}
        self._ports: supervisor.Ports = ()  # slurmctld's and slurmd's
        self._scripts = 0
        self._started = False
        self._with_accounting = accounting
        self._accounting: Optional[SlurmAccounting] = None

    # --- public API ---------------------------------------------------------------------

    def __enter__(self) -> SlurmCluster:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._started

    @property
    def accounting(self) -> SlurmAccounting:
        """MariaDB and slurmdbd of a cluster started with `accounting=True`."""
        if self._accounting is None:
            raise RuntimeError("this cluster runs without accounting (accounting=True adds it)")
        return self._accounting

    def start(self) -> None:
        check_prerequisites(self.cgroup_root, accounting=self._with_accounting)
        user = ensure_user(self.job_user)
        self.workdir = Path(tempfile.mkdtemp(prefix="cw-slurm-", dir=self._parent_dir))
        with _live_lock:
            _live.add(self)
        self._started = True
        try:
            self._prepare(user)
            self._start_munged()
            self._ports = supervisor.free_ports(2)
            if self._with_accounting:
                self._accounting = SlurmAccounting(
                    self.workdir, self.env, self.cluster_name, find=find_binary,
                    ensure_user=ensure_user, startup_timeout=self.startup_timeout)
                # sacctmgr finds slurmdbd through slurm.conf: written for each port tried.
                self._accounting.start(user, self._write_config)
            supervisor.on_free_ports(2, self._start_slurm)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Cancel every job, stop the daemons, remove leftover job cgroups and the workdir."""
        if not self._started:
            return
        self._started = False
        # A second Ctrl-C must not leave jobs and cgroups behind: it waits until the end.
        held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        try:
            if self._alive("slurmctld"):
                self._cancel_all()
            self._stop_daemons(("slurmd", "slurmctld"))
            if self._accounting is not None:  # after slurmctld, which reports to it
                self._accounting.stop()
            self._stop_daemons(("munged",))
            self._remove_job_cgroups()
        finally:
            with _live_lock:
                _live.discard(self)
            if not self.keep_workdir:
                shutil.rmtree(self.workdir, ignore_errors=True)
            signal.pthread_sigmask(signal.SIG_SETMASK, held)

    def command(
        self, *args: str, check: bool = True, timeout: float = 30.0
    ) -> subprocess.CompletedProcess[str]:
        """Run a Slurm client (`scontrol`, `squeue`, ...) as the caller against this cluster."""
        result = subprocess.run(
            [find_binary(args[0]), *args[1:]], env=self.env, capture_output=True, text=True,
            timeout=timeout, check=False)
        if check and result.returncode != 0:
            raise subprocess.CalledProcessError(
                result.returncode, result.args, result.stdout, result.stderr)
        return result

    def submit(
        self, script: str, *, user: Optional[str] = None, **options: Union[str, int, bool]
    ) -> int:
        """Submit a batch script as `user` (default: the job user); return the job ID.

        Options are sbatch's long options, `_` for `-`: `submit(s, ntasks=2, mem="1G")`.
        Output goes to `job_output(jobid)` unless `output=` says otherwise.
        """
        account = pwd.getpwnam(user or self.job_user)
        if not script.startswith("#!"):
            script = "#!/bin/bash\n" + script
        self._scripts += 1
        path = self.jobs_dir / f"script-{self._scripts}.sh"
        path.write_text(script, encoding="utf-8")
        path.chmod(0o644)
        options = {"output": str(self.jobs_dir / "slurm-%j.out"),
                   "chdir": str(self.jobs_dir), **options}
        argv = [find_binary("sbatch"), "--parsable"]
        for key, value in options.items():
            if value is False:
                continue
            flag = "--" + key.replace("_", "-")
            argv.append(flag if value is True else f"{flag}={value}")
        argv.append(str(path))
        env = {**self.env, "PATH": _JOB_PATH, "HOME": str(self.jobs_dir),
               "USER": account.pw_name, "LOGNAME": account.pw_name, "LANG": "C.UTF-8"}
        if account.pw_uid == os.geteuid():
            result = subprocess.run(argv, env=env, cwd=self.jobs_dir, capture_output=True,
                                    text=True, timeout=30, check=False)
        else:  # submitted by the user itself, as on a real cluster (not sbatch --uid)
            result = subprocess.run(argv, env=env, cwd=self.jobs_dir, capture_output=True,
                                    text=True, timeout=30, check=False, user=account.pw_uid,
                                    group=account.pw_gid, extra_groups=[])
        if result.returncode != 0:
            raise SlurmJobError(f"sbatch failed ({result.returncode}): {result.stderr.strip()}")
        return int(result.stdout.strip().split(";")[0])

    def job_state(self, jobid: int) -> str:
        """RUNNING, PENDING, COMPLETED, ...; PURGED once slurmctld forgot the job."""
        result = self.command("scontrol", "-o", "show", "job", str(jobid), check=False)
        if result.returncode != 0:
            if "invalid job id" in result.stderr.lower():
                return "PURGED"
            raise SlurmJobError(f"scontrol show job {jobid}: {result.stderr.strip()}")
        fields = dict(f.split("=", 1) for f in result.stdout.split() if "=" in f)
        return fields.get("JobState", "UNKNOWN")

    def wait_running(self, jobid: int, timeout: float = 60.0) -> None:
        state = self._wait_state(jobid, lambda s: s == "RUNNING" or s in TERMINAL_STATES,
                                 timeout)
        if state != "RUNNING":
            raise SlurmJobError(self._describe(jobid, f"ended ({state}) before running"))

    def wait_done(self, jobid: int, timeout: float = 120.0) -> str:
        """Wait until the job ended; return its final state (COMPLETED, FAILED, ...)."""
        return self._wait_state(jobid, lambda s: s in TERMINAL_STATES, timeout)

    def cancel(self, jobid: int, signal_name: Optional[str] = None) -> None:
        args = ["scancel", str(jobid)]
        if signal_name:
            args[1:1] = ["--full", f"--signal={signal_name}"]
        self.command(*args)

    def steps(self, jobid: int) -> list[str]:
        """IDs of the job's running steps, e.g. ["123.batch", "123.0", "123.1"]."""
        out = self.command("squeue", "-h", "-s", "-j", str(jobid), "-o", "%i").stdout
        return sorted(out.split())

    def wait_steps(self, jobid: int, count: int, timeout: float = 60.0) -> list[str]:
        """Wait until `count` numbered steps (not batch/extern) run; return all step IDs."""
        deadline = time.monotonic() + timeout
        while True:
            steps = self.steps(jobid)
            if sum(s.rsplit(".", 1)[-1].isdigit() for s in steps) >= count:
                return steps
            if time.monotonic() >= deadline:
                raise SlurmJobError(self._describe(jobid, f"has steps {steps}, not {count}"))
            time.sleep(0.2)

    def job_output(self, jobid: int) -> str:
        path = self.jobs_dir / f"slurm-{jobid}.out"
        try:
            return path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""

    def job_cgroup(self, jobid: int, controller: str = "memory") -> Path:
        """The job's cgroup directory for `controller` (exists while the job runs)."""
        top = self.cgroup_root / controller / f"slurm_{self.node_name}"
        found = sorted(top.glob(f"uid_*/job_{jobid}"))
        if found:
            return found[0]
        return top / f"uid_{pwd.getpwnam(self.job_user).pw_uid}" / f"job_{jobid}"

    def wait_cgroup(self, jobid: int, controller: str = "memory",
                    timeout: float = 30.0) -> Path:
        """The job's cgroup directory once it exists: slurmctld says RUNNING before the
        job's slurmstepd on the node has made its cgroups."""
        deadline = time.monotonic() + timeout
        while not self.job_cgroup(jobid, controller).is_dir():
            if time.monotonic() > deadline:
                raise AssertionError(self._describe(
                    jobid, f"no {controller} cgroup within {timeout:g} s"))
            time.sleep(0.1)
        return self.job_cgroup(jobid, controller)

    def log_tails(self, lines: int = LOG_TAIL_LINES) -> str:
        parts = []
        for name in ("munged", "slurmctld", "slurmd"):
            parts.append(f"--- {name} ---\n{_tail(self.workdir / 'log' / f'{name}.out', lines)}")
        if self._accounting is not None:
            parts.append(self._accounting.log_tail(lines))
        return "\n".join(parts)

    # --- start ---------------------------------------------------------------------------

    def _prepare(self, user: pwd.struct_passwd) -> None:
        # munged insists that every directory above its socket is searchable by all;
        # the job user must reach slurm.conf and its working directory too.
        self.workdir.chmod(0o755)
        for name in ("munge", "state", "spool", "log", "jobs"):
            (self.workdir / name).mkdir(mode=0o755)
            (self.workdir / name).chmod(0o755)
        (self.workdir / "spool" / f"slurmd_{self.node_name}").mkdir(mode=0o755)
        self.jobs_dir = self.workdir / "jobs"
        os.chown(self.jobs_dir, user.pw_uid, user.pw_gid)
        self.conf_path = self.workdir / "slurm.conf"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
        self.env["SLURM_CONF"] = str(self.conf_path)
        key = self.workdir / "munge" / "munge.key"
        fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(os.urandom(128))  # what mungekey writes: 1024 random bits
        key.chmod(0o400)  # munged runs as root here: root-owned, readable by root only

    def _start_munged(self) -> None:
        munge = self.workdir / "munge"
        socket_path = munge / "munge.socket"
        self._spawn("munged", [
            find_binary("munged"), "--foreground", f"--socket={socket_path}",
            f"--key-file={munge / 'munge.key'}", f"--pid-file={munge / 'munged.pid'}",
            f"--seed-file={munge / 'munged.seed'}", f"--log-file={munge / 'munged.log'}",
            "--num-threads=4",
        ])
        self._wait("munged", supervisor.unix_socket(socket_path), 15.0)

    def _write_config(self) -> None:
        settings = ClusterSettings(
            workdir=self.workdir, cluster_name=self.cluster_name, node_name=self.node_name,
            partition=self.partition, cgroup_root=self.cgroup_root,
            ctld_port=self._ports[0], slurmd_port=self._ports[1], hardware=_hardware(),
            # Job IDs no other cluster on this machine uses: a test that reads every job
            # cgroup of the machine cannot mistake another run's job for its own.
            first_job_id=first_job_id(os.getpid(), self._number),
            jobs_per_core=self.jobs_per_core,
            accounting_port=self._accounting.port if self._accounting else None)
        files = {"slurm.conf": slurm_conf(settings), "cgroup.conf": cgroup_conf(settings),
                 "plugstack.conf": ""}
        for name, text in files.items():
            (self.workdir / name).write_text(text, encoding="utf-8")
            (self.workdir / name).chmod(0o644)  # the job user's srun reads them too

    def _start_slurm(self, ports: supervisor.Ports) -> None:
        """slurmctld and slurmd on `ports`; both stopped again when either fails."""
        self._ports = ports
        self._write_config()
        try:
            # -i: start without state files (this is a fresh cluster every time).
            self._spawn("slurmctld", [find_binary("slurmctld"), "-D", "-i"], ports[:1])
            self._wait("slurmctld", supervisor.Probe(self._controller_up, "no answer to ping"),
                       self.startup_timeout)
            # -N: our node name, not the machine's hostname.
            self._spawn("slurmd", [find_binary("slurmd"), "-D", "-N", self.node_name],
                        ports[1:])
            self._wait("slurmd", supervisor.Probe(self._node_idle, "node not idle"),
                       self.startup_timeout)
        except BaseException:
            self._stop_daemons(("slurmd", "slurmctld"))
            raise

    def _controller_up(self) -> bool:
        try:
            result = self.command("scontrol", "ping", check=False, timeout=10)
        except subprocess.TimeoutExpired:  # a loaded machine: ask again
            return False
        return result.returncode == 0 and " is UP" in result.stdout

    def _node_idle(self) -> bool:
        try:
            result = self.command(
                "sinfo", "-h", "-N", "-n", self.node_name, "-o", "%T", check=False, timeout=10)
        except subprocess.TimeoutExpired:
            return False
        return result.returncode == 0 and result.stdout.strip() == "idle"

    def _spawn(self, name: str, argv: list[str], ports: supervisor.Ports = ()) -> None:
        self._daemons[name] = supervisor.spawn(
            name, argv, self.workdir / "log" / f"{name}.out", ports=ports, env=self.env,
            cwd=self.workdir, stop_timeout=STOP_TIMEOUT)

    def _wait(self, name: str, ready: supervisor.Probe, timeout: float) -> None:
        """`ready` holds within `timeout` s, or ServiceStartError with every daemon's log."""
        supervisor.await_ready(self._daemons[name], ready, timeout, interval=0.2,
                               log_tail=self.log_tails)

    def _alive(self, name: str) -> bool:
        daemon = self._daemons.get(name)
        return daemon is not None and daemon.poll() is None

    # --- jobs ------------------------------------------------------------------------

    def _wait_state(self, jobid: int, done: Callable[[str], bool], timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while True:
            state = self.job_state(jobid)
            if done(state):
                return state
            if time.monotonic() >= deadline:
                raise SlurmJobError(self._describe(jobid, f"still {state} after {timeout:g} s"))
            time.sleep(0.2)

    def _describe(self, jobid: int, what: str) -> str:
        output = "\n".join(self.job_output(jobid).splitlines()[-20:])
        return f"job {jobid} {what}\n--- job output ---\n{output}\n{self.log_tails(15)}"

    # --- stop ------------------------------------------------------------------------

    def _cancel_all(self) -> None:
        with contextlib.suppress(subprocess.SubprocessError, OSError):
            self.command("scancel", f"--partition={self.partition}", check=False, timeout=10)
            deadline = time.monotonic() + 15.0
            while time.monotonic() < deadline:
                out = self.command("squeue", "-h", "-o", "%i", check=False, timeout=10)
                if out.returncode == 0 and not out.stdout.strip() and not self._job_pids():
                    return
                time.sleep(0.2)

    def _stop_daemons(self, names: tuple[str, ...]) -> None:
        for name in names:
            daemon = self._daemons.pop(name, None)
            if daemon is not None:
                daemon.stop()

    def _cgroup_tops(self) -> list[Path]:
        return [top for controller in _v1_mounts(self.cgroup_root)
                if (top := self.cgroup_root / controller / f"slurm_{self.node_name}").is_dir()]

    def _job_pids(self) -> set[int]:
        pids: set[int] = set()
        for top in self._cgroup_tops():
            for procs in top.rglob("cgroup.procs"):
                with contextlib.suppress(OSError, ValueError):
                    pids.update(int(p) for p in procs.read_text().split())
        return pids

    def _remove_job_cgroups(self) -> None:
        """Kill what is left in this cluster's job cgroups (stepds too), then rmdir them."""
        deadline = time.monotonic() + 10.0
        while (pids := self._job_pids()) and time.monotonic() < deadline:
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.1)
        for top in self._cgroup_tops():
            below = sorted((d for d in top.rglob("*") if d.is_dir()),
                           key=lambda d: len(d.parts), reverse=True)
            for directory in [*below, top]:  # deepest first
                for _ in range(50):  # EBUSY while the last killed tasks are reaped
                    try:
                        directory.rmdir()
                        break
                    except FileNotFoundError:
                        break
                    except OSError:
                        time.sleep(0.1)


# --- helpers ---------------------------------------------------------------------------

_live: set[SlurmCluster] = set()
_live_lock = threading.Lock()
_numbers = itertools.count()  # clusters made by this process


def first_job_id(pid: int, number: int) -> int:
    """The first job ID of cluster `number` of process `pid`: 100 IDs of its own (4 clusters
    per process before they wrap), below Slurm's default MaxJobId (67,043,328)."""
    slot = (pid % 165_000) * 4 + number % 4
    return 100_000 + slot * 100


@atexit.register
def _stop_leftovers() -> None:
    with _live_lock:
        leftovers = list(_live)
    for cluster in leftovers:
        cluster.stop()


def _v1_mounts(cgroup_root: Path) -> set[str]:
    try:
        mounts = Path("/proc/self/mounts").read_text(encoding="utf-8")
    except OSError:
        return set()
    return {c for c in v1_controllers(mounts, cgroup_root) if (cgroup_root / c).is_dir()}


def _hardware() -> str:
    """CPUs, sockets, cores and memory as slurmd detects them (`slurmd -C`)."""
    out = subprocess.run([find_binary("slurmd"), "-C"], capture_output=True, text=True,
                         timeout=30, check=True).stdout
    fields: Mapping[str, str] = dict(
        f.split("=", 1) for f in out.split() if "=" in f)
    keys = ("CPUs", "Boards", "SocketsPerBoard", "CoresPerSocket", "ThreadsPerCore")
    parts = [f"{k}={fields[k]}" for k in keys if k in fields]
    # A little below the detected memory: a node that reports less than configured is
    # drained, and the kernel's figure moves by a few MiB.
    memory = int(int(fields.get("RealMemory", "1024")) * 0.95)
    return " ".join([*parts, f"RealMemory={memory}"])


def _tail(path: Path, lines: int) -> str:
    try:
        data = path.read_bytes()
    except OSError as exc:
        return f"(log unreadable: {exc})"
    return "\n".join(data.decode("utf-8", "replace").splitlines()[-lines:])
