"""One way to run a loopback daemon: free ports, a log, a readiness probe, a retry when a port
was taken, one error type, and a stop that always happens.

Every daemon of the harness starts here (Prometheus and its exporters, MariaDB, slapd,
PostgreSQL, gunicorn, nginx, munged and Slurm's daemons, the tests' job exporter), so that
the next port or start-up flake is fixed in one place:

    daemon = start("node_exporter", lambda ports: [exe, f"--listen={LOOPBACK}:{ports[0]}"],
                   log_path, lambda ports: http_ok(f"http://{LOOPBACK}:{ports[0]}/metrics"),
                   startup_timeout=30)
    with running(daemon):
        ...

- Ports: `free_port()` takes a port below the kernel's ephemeral range
  (net.ipv4.ip_local_port_range) that can be bound right now. Outgoing connections take their
  source ports from the ephemeral range, so none of the suite's own connections can take a
  port between this probe and the daemon's bind; other processes choosing at the same time
  (pytest-xdist workers) choose at random among thousands. The kernel's own choice (port 0)
  is the fallback when that range is too small to leave room.
- Output: the daemon's stdout and stderr go to `log_path` (appended to with `append=True`);
  files the daemon writes itself (`own_logs`, e.g. MariaDB's error log) are read too. What it
  wrote since this start is what the error shows and what a taken port is recognised from.
- A start that failed because a port was taken (PORT_TAKEN: each daemon's wording) is retried
  on new ports, PORT_ATTEMPTS in all; a daemon that keeps retrying its bind by itself
  (gunicorn, nginx) is killed as soon as its log says so. Any other failure raises
  ServiceStartError at once, carrying the daemon's name, the reason and its log tail.
- Ready means the probe holds *and* the daemon (or a process it started) is what listens on
  its ports: when two starts chose the same port at once, the loser's probe would otherwise be
  answered by the winner (another worker's gunicorn answers /accounts/login/ with 200 too), and
  a test would talk to another test's server. The loser counts as a taken port: retried.
- Every daemon is tracked until stopped; an atexit hook stops what nobody stopped.
- Counting: with CLUSTERWATCH_LOOPBACK_STARTS naming a file, each start appends a line to it
  (`<unix time> <pid> <daemon> <ports>`), from every process of a run (pytest-xdist workers,
  the demo's subprocesses): how many times each service starts per run.
- `Daemon.stop()`: SIGCONT (a paused daemon would never see the signal), the stop signal
  (SIGTERM unless the daemon wants another, e.g. PostgreSQL's fast shutdown, SIGINT), SIGKILL
  after the timeout. A daemon that forks workers (`process_group=True`) leads its own process
  group: the graceful signal still goes to the leader, whose protocol stops its workers, but
  SIGKILL and the sweep after the leader's exit go to the whole group, so no worker is left
  holding a port.
"""

from __future__ import annotations

import atexit
import contextlib
import http.client
import os
import secrets
import signal
import socket
import ssl
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional, TypeVar, Union

LOOPBACK = "127.0.0.1"
PORT_ATTEMPTS = 3
STOP_TIMEOUT = 10.0  # seconds between the stop signal and SIGKILL
LOG_TAIL_LINES = 40
POLL_INTERVAL = 0.05
# What each daemon writes when its port is taken, in lower case. The kernel's EADDRINUSE text
# covers Go's daemons, nginx, slapd ("errno=98 (Address already in use)"), MariaDB ("Got error:
# 98: Address already in use"), Slurm's daemons, Python and PostgreSQL; gunicorn says
# "Connection in use: ('127.0.0.1', PORT)"; PostgreSQL starts its line with "could not bind".
PORT_TAKEN = ("address already in use", "connection in use", "could not bind")
# Ports are taken at random from [_LOWEST_PORT, the ephemeral range's start).
_LOWEST_PORT = 10_000
_PORT_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_PORT_TRIES = 64  # random ports probed before falling back to the kernel's choice
STARTS_ENVIRON = "CLUSTERWATCH_LOOPBACK_STARTS"

Ports = tuple[int, ...]
T = TypeVar("T")

# Probes and the harness's own queries never go through an HTTP proxy from the environment.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class ServiceStartError(RuntimeError):
    """A daemon exited or did not become ready in time; the message ends with its log.

    `port_taken`: its log said a port it was given was taken (the retry's condition). A
    RuntimeError, as MariaDB's and slapd's start failures were before (the demo catches
    those); the monitor's, PostgreSQL's and nginx's errors are subclasses with their old names.
    """

    def __init__(self, name: str, reason: str, log_tail: str = "", *,
                 port_taken: bool = False, log_path: Optional[Path] = None) -> None:
        message = f"{name} did not start: {reason}"
        if log_tail:
            where = f" ({log_path})" if log_path is not None else ""
            message += f"\n--- end of its log{where} ---\n{log_tail}"
        super().__init__(message)
        self.name = name
        self.reason = reason
        self.log_tail = log_tail
        self.port_taken = port_taken
        self.log_path = log_path


def port_taken(text: str) -> bool:
    """Whether a daemon's output says that a port it was to bind is taken."""
    lowered = text.lower()
    return any(wording in lowered for wording in PORT_TAKEN)


# --- ports --------------------------------------------------------------------------------


def free_port() -> int:
    """A TCP port on 127.0.0.1 that could be bound a moment ago, outside the ephemeral range."""
    span = _port_span()
    if span is not None:
        low, high = span
        for _ in range(_PORT_TRIES):
            port = low + secrets.randbelow(high - low)  # never the seeded `random`
            if _bindable(port):
                return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


def free_ports(count: int) -> Ports:
    """`count` different free ports."""
    chosen: list[int] = []
    while len(chosen) < count:
        port = free_port()
        if port not in chosen:
            chosen.append(port)
    return tuple(chosen)


def _port_span() -> Optional[tuple[int, int]]:
    try:
        ephemeral_start = int(_PORT_RANGE_FILE.read_text(encoding="ascii").split()[0])
    except (OSError, ValueError, IndexError):
        return None
    if ephemeral_start - _LOWEST_PORT < 1000:
        return None
    return _LOWEST_PORT, ephemeral_start


def _bindable(port: int) -> bool:
    # No SO_REUSEADDR: a port with connections in TIME_WAIT counts as taken too.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((LOOPBACK, port))
        except OSError:
            return False
    return True


# --- readiness ----------------------------------------------------------------------------


class Probe:
    """A readiness check: calling it says whether the daemon is ready. `failure` names what
    was awaited in the error ("node not idle within 60 s"), `last` what the check last saw."""

    def __init__(self, check: Optional[Callable[[], bool]] = None,
                 failure: str = "not ready") -> None:
        self._check = check
        self.failure = failure
        self.last = ""

    def check(self) -> bool:
        if self._check is None:
            raise NotImplementedError
        return self._check()

    def __call__(self) -> bool:
        try:
            return self.check()
        except OSError as exc:  # refused, reset, timed out: not up yet
            self.last = f"{type(exc).__name__}: {exc}"
            return False


class HttpOk(Probe):
    """GET `url` answers 200 (no proxy; `context` for https)."""

    def __init__(self, url: str, *, context: Optional[ssl.SSLContext] = None,
                 timeout: float = 2.0) -> None:
        super().__init__(failure="not ready")
        self.url = url
        self.timeout = timeout
        self._opener = _OPENER if context is None else urllib.request.build_opener(
            urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=context))

    def check(self) -> bool:
        try:
            status, _ = http_get(self.url, self.timeout, self._opener)
        except (OSError, http.client.HTTPException) as exc:
            self.last = f"{self.url} last answered nothing ({type(exc).__name__})"
            return False
        self.last = f"{self.url} last answered {status}"
        return status == 200


class TcpAccepts(Probe):
    """127.0.0.1:`port` accepts a connection."""

    def __init__(self, port: int, timeout: float = 1.0) -> None:
        super().__init__(failure=f"port {port} not accepting connections")
        self.port = port
        self.timeout = timeout

    def check(self) -> bool:
        socket.create_connection((LOOPBACK, self.port), timeout=self.timeout).close()
        return True


class UnixSocket(Probe):
    """The Unix socket `path` exists and accepts a connection."""

    def __init__(self, path: Path, timeout: float = 1.0) -> None:
        super().__init__(failure=f"no socket {path}")
        self.path = path
        self.timeout = timeout

    def check(self) -> bool:
        if not self.path.exists():
            return False
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(self.timeout)
            sock.connect(str(self.path))
        return True


def http_ok(url: str, *, context: Optional[ssl.SSLContext] = None) -> Probe:
    return HttpOk(url, context=context)


def tcp_accepts(port: int) -> Probe:
    return TcpAccepts(port)


def unix_socket(path: Path) -> Probe:
    return UnixSocket(path)


def http_get(url: str, timeout: float,
             opener: urllib.request.OpenerDirector = _OPENER) -> tuple[int, bytes]:
    """Status and body of GET `url`, an HTTP error status included; never through a proxy."""
    try:
        with opener.open(url, timeout=timeout) as response:
            return int(response.status), bytes(response.read())
    except urllib.error.HTTPError as exc:
        return int(exc.code), exc.read()


# --- processes ----------------------------------------------------------------------------


@dataclass(frozen=True)
class _StopPlan:
    group: bool = False
    signal: int = signal.SIGTERM
    timeout: float = STOP_TIMEOUT


_live: dict[subprocess.Popen[bytes], _StopPlan] = {}  # `process in _live`: not stopped yet
_live_lock = threading.Lock()


@dataclass(eq=False)
class Daemon:
    """A started daemon: its process, the ports it was given and where its output goes."""

    name: str
    process: subprocess.Popen[bytes]
    log_path: Path
    ports: Ports = ()
    own_logs: tuple[Path, ...] = ()
    # Where each log stood when the daemon started: what it wrote since is its output.
    since: Mapping[Path, int] = field(default_factory=dict, repr=False)

    @property
    def port(self) -> int:
        return self.ports[0]

    @property
    def pid(self) -> int:
        return self.process.pid

    def poll(self) -> Optional[int]:
        return self.process.poll()

    def output(self) -> dict[Path, str]:
        """What the daemon wrote to each of its logs since it started."""
        return {path: _read_from(path, self.since.get(path, 0))
                for path in (self.log_path, *self.own_logs)}

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        """The end of what it wrote since it started; each log named when it has several."""
        written = [(path, text) for path, text in self.output().items() if text.strip()]
        if len(written) == 1:
            return _last_lines(written[0][1], lines)
        return "\n".join(f"--- {path.name} ---\n{_last_lines(text, lines)}"
                         for path, text in written)

    def stop(self, timeout: Optional[float] = None) -> None:
        """The stop signal, SIGKILL after `timeout` (default: the daemon's); see stop_process."""
        stop_process(self.process, timeout)


def spawn(name: str, argv: Sequence[str], log_path: Path, *, ports: Ports = (),
          own_logs: Sequence[Path] = (), env: Optional[Mapping[str, str]] = None,
          cwd: Optional[Path] = None, append: bool = False, process_group: bool = False,
          stop_signal: int = signal.SIGTERM, stop_timeout: float = STOP_TIMEOUT,
          preexec_fn: Optional[Callable[[], None]] = None, user: Optional[int] = None,
          group: Optional[int] = None) -> Daemon:
    """Starts `argv` (stdin closed, output to `log_path`) and tracks it until it is stopped.

    `process_group`: the daemon forks workers; it leads its own group (a new session, as
    pg_ctl starts PostgreSQL), which SIGKILL and the final sweep reach. `user`/`group`: run
    as that uid/gid, without supplementary groups (a root caller's way to start PostgreSQL).
    """
    log_path.parent.mkdir(parents=True, exist_ok=True)
    since = {path: _size(path) for path in own_logs}
    with open(log_path, "ab" if append else "wb") as log:
        since[log_path] = log.tell()
        process = subprocess.Popen(
            list(argv), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            env=dict(env) if env is not None else None, cwd=cwd,
            start_new_session=process_group, preexec_fn=preexec_fn, user=user, group=group,
            extra_groups=[] if user is not None else None)
    with _live_lock:
        _live[process] = _StopPlan(process_group, stop_signal, stop_timeout)
    count_start(name, ports)
    return Daemon(name=name, process=process, log_path=log_path, ports=ports,
                  own_logs=tuple(own_logs), since=since)


def count_start(name: str, ports: Ports) -> None:
    """One line in the CLUSTERWATCH_LOOPBACK_STARTS file, when it is set (spawn writes it;
    a server of this process, aiosmtpd's, calls it itself)."""
    counted = os.environ.get(STARTS_ENVIRON)
    if not counted:
        return
    line = f"{time.time():.3f} {os.getpid()} {name.replace(' ', '_')} {','.join(map(str, ports))}\n"
    with contextlib.suppress(OSError):  # one short O_APPEND write: whole lines from all workers
        fd = os.open(counted, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)


def await_ready(daemon: Daemon, probe: Union[Probe, Callable[[], bool]], timeout: float, *,
                interval: float = POLL_INTERVAL,
                error: type[ServiceStartError] = ServiceStartError,
                log_tail: Optional[Callable[[], str]] = None) -> None:
    """Returns once `probe()` holds; otherwise stops the daemon and raises `error` saying why:
    it exited, its log says its port is taken, or `timeout` seconds passed.

    `log_tail`: what the error shows instead of the daemon's own log tail (a cluster's logs).
    """
    check = probe if isinstance(probe, Probe) else Probe(probe)
    watch = _OutputWatch(daemon)
    deadline = time.monotonic() + timeout
    at_once = False
    try:
        while True:
            code = daemon.poll()
            if code is not None:
                reason = f"exited with status {code}"
                break
            if watch.says_port_taken():
                # It would keep retrying its bind (gunicorn, nginx): nothing to wait for.
                reason = f"a port it was given ({', '.join(map(str, daemon.ports))}) is taken"
                at_once = True
                break
            if check():
                other = _served_by_another(daemon)
                if other is None:
                    return
                reason = f"port {other} is served by another process"
                at_once = True
                break
            if time.monotonic() >= deadline:
                reason = f"{check.failure} within {timeout:g} s"
                if check.last:
                    reason += f" ({check.last})"
                break
            time.sleep(interval)
    except BaseException:
        daemon.stop()
        raise
    daemon.stop(0.0 if at_once else None)
    taken = at_once or port_taken("\n".join(daemon.output().values()))
    raise error(daemon.name, reason, log_tail() if log_tail else daemon.log_tail(),
                port_taken=taken, log_path=daemon.log_path)


def on_free_ports(count: int, attempt: Callable[[Ports], T], *,
                  fixed: Optional[Sequence[int]] = None, attempts: int = PORT_ATTEMPTS) -> T:
    """`attempt(ports)` with `count` free ports, again with new ones while it fails with a
    ServiceStartError whose log says a port was taken (PORT_ATTEMPTS in all). `fixed`: the
    caller's own ports, tried once. `attempt` stops what it started before it raises."""
    for number in range(1, attempts + 1):
        ports = tuple(fixed) if fixed is not None else free_ports(count)
        try:
            return attempt(ports)
        except ServiceStartError as failure:
            if fixed is not None or number == attempts or not failure.port_taken:
                raise
    raise AssertionError("unreachable")  # pragma: no cover


def start(name: str, command: Callable[[Ports], Sequence[str]], log_path: Path,
          ready: Callable[[Ports], Union[Probe, Callable[[], bool]]], *,
          startup_timeout: float, ports: int = 1, fixed_ports: Optional[Sequence[int]] = None,
          own_logs: Sequence[Path] = (), env: Optional[Mapping[str, str]] = None,
          cwd: Optional[Path] = None, append: bool = False, process_group: bool = False,
          stop_signal: int = signal.SIGTERM, stop_timeout: float = STOP_TIMEOUT,
          user: Optional[int] = None, group: Optional[int] = None,
          interval: float = POLL_INTERVAL,
          error: type[ServiceStartError] = ServiceStartError) -> Daemon:
    """A daemon up and ready on `ports` free ports: `command(ports)` is its argv (it may
    write the daemon's configuration for those ports), `ready(ports)` its readiness probe.
    The keywords are spawn's and await_ready's."""

    def attempt(chosen: Ports) -> Daemon:
        daemon = spawn(name, command(chosen), log_path, ports=chosen, own_logs=own_logs,
                       env=env, cwd=cwd, append=append, process_group=process_group,
                       stop_signal=stop_signal, stop_timeout=stop_timeout, user=user,
                       group=group)
        await_ready(daemon, ready(chosen), startup_timeout, interval=interval, error=error)
        return daemon

    return on_free_ports(ports, attempt, fixed=fixed_ports)


@contextlib.contextmanager
def running(daemon: Daemon) -> Iterator[Daemon]:
    """`daemon` until the block ends (also when it raises), then stopped."""
    try:
        yield daemon
    finally:
        daemon.stop()


def track(process: subprocess.Popen[bytes], *, process_group: bool = False) -> None:
    """Stop `process` at interpreter exit if nobody stopped it before (`stop_process`)."""
    with _live_lock:
        _live.setdefault(process, _StopPlan(group=process_group))


def stop_process(process: subprocess.Popen[bytes], timeout: Optional[float] = None) -> None:
    """SIGCONT and the stop signal, SIGKILL after `timeout` seconds (default: what it was
    started with, else STOP_TIMEOUT); forgets the process either way."""
    with _live_lock:
        plan = _live.get(process, _StopPlan())
    try:
        _stop(process, plan, plan.timeout if timeout is None else timeout)
    finally:
        with _live_lock:
            _live.pop(process, None)


def _stop(process: subprocess.Popen[bytes], plan: _StopPlan, timeout: float) -> None:
    if process.returncode is None and not _exited(process, 0.0):
        with contextlib.suppress(ProcessLookupError):
            os.kill(process.pid, signal.SIGCONT)  # a stopped daemon would never see the signal
            os.kill(process.pid, plan.signal)
        if not _exited(process, timeout):
            _kill(process, plan.group)
    if plan.group:
        # The leader is gone (not reaped yet when we waited for it: its group id cannot have
        # been reused); whatever is left of its group is a worker that outlived it.
        _kill(process, group=True)
    process.wait()


def _exited(process: subprocess.Popen[bytes], timeout: float) -> bool:
    """Whether the process has exited within `timeout` s, without reaping it."""
    deadline = time.monotonic() + timeout
    while True:
        if process.returncode is not None:
            return True
        try:
            exited = os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:  # reaped elsewhere (another thread's poll)
            return True
        if exited is not None:
            return True
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        time.sleep(min(POLL_INTERVAL, left))


def _kill(process: subprocess.Popen[bytes], group: bool) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if group:
            os.killpg(process.pid, signal.SIGKILL)
        elif process.returncode is None:
            os.kill(process.pid, signal.SIGKILL)


@atexit.register
def _stop_leftovers() -> None:
    with _live_lock:
        leftovers = list(_live)
    for process in leftovers:
        stop_process(process)


def _served_by_another(daemon: Daemon) -> Optional[int]:
    """A port of the daemon's on which another process listens; None when each port it was
    given is its own (its process or one it started listens there), or nobody can tell."""
    mine: Optional[set[int]] = None
    for port in daemon.ports:
        listening = _listening_inodes(port)
        if not listening:
            continue  # not listening (yet, or it needs no listener there): nothing to tell
        if mine is None:
            mine = _socket_inodes({daemon.pid})
            if mine is None:
                return None  # its descriptors are not ours to read
        if listening & mine:
            continue
        family = _socket_inodes(_descendants(daemon.pid))  # a wrapper that forked it
        if family is not None and listening & family:
            mine |= family
            continue
        return port
    return None


def _listening_inodes(port: int) -> set[int]:
    """Socket inodes of the TCP listeners on `port` (any address), from /proc/net/tcp{,6}."""
    found: set[int] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text(encoding="ascii").splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            # local_address is ADDR:PORT in hex; state 0A is LISTEN; the inode is field 10.
            if len(fields) > 9 and fields[3] == "0A" and int(
                    fields[1].rsplit(":", 1)[1], 16) == port:
                found.add(int(fields[9]))
    return found


def _socket_inodes(pids: set[int]) -> Optional[set[int]]:
    """The socket inodes the processes `pids` hold; None when none of them can be read."""
    found: set[int] = set()
    readable = False
    for pid in pids:
        try:
            descriptors = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        readable = True
        for descriptor in descriptors:
            try:
                target = os.readlink(f"/proc/{pid}/fd/{descriptor}")
            except OSError:
                continue
            if target.startswith("socket:["):
                found.add(int(target[8:-1]))
    return found if readable else None


def _descendants(pid: int) -> set[int]:
    """`pid` and every process below it, from /proc/*/stat."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry.name}/stat").read_text(encoding="utf-8", errors="replace")
            parent = int(stat.rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(parent, []).append(int(entry.name))
    family, todo = {pid}, [pid]
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in family:
                family.add(child)
                todo.append(child)
    return family


# --- logs -----------------------------------------------------------------------------------


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    """The last `lines` lines of the file at `path` (or why it cannot be read)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        return f"(log unreadable: {exc})"
    return _last_lines(data.decode("utf-8", "replace"), lines)


def _last_lines(text: str, lines: int) -> str:
    return "\n".join(text.splitlines()[-lines:])


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _read_from(path: Path, offset: int) -> str:
    try:
        with open(path, "rb") as handle:
            if handle.seek(0, os.SEEK_END) < offset:
                offset = 0  # the daemon truncated it: all of it is this start's
            handle.seek(offset)
            return handle.read().decode("utf-8", "replace")
    except OSError:
        return ""


class _OutputWatch:
    """Reads what a daemon writes to its logs as it comes, looking for a taken port."""

    _OVERLAP = 64  # characters kept between reads: a wording split across two reads

    def __init__(self, daemon: Daemon) -> None:
        self._positions = {path: daemon.since.get(path, 0)
                           for path in (daemon.log_path, *daemon.own_logs)}
        self._carry = dict.fromkeys(self._positions, "")

    def says_port_taken(self) -> bool:
        for path, position in self._positions.items():
            try:
                with open(path, "rb") as handle:
                    if handle.seek(0, os.SEEK_END) < position:
                        position = 0
                    handle.seek(position)
                    data = handle.read()
            except OSError:
                continue
            self._positions[path] = position + len(data)
            text = self._carry[path] + data.decode("utf-8", "replace")
            if port_taken(text):
                return True
            self._carry[path] = text[-self._OVERLAP:]
        return False
