"""The harness's one process supervisor: free ports outside the ephemeral range, a retry on
new ports only when a port was taken (also while another start takes the same port at the
same moment), readiness, the log tail in its one error, and a stop that reaches a paused
daemon, a daemon that ignores SIGTERM and the workers a daemon forked.

The daemons here are small Python programs: cheap, and they fail exactly as asked."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Callable

import pytest

from clusterwatch.loopback import supervisor
from clusterwatch.loopback.services import Service, node_exporter
from clusterwatch.loopback.supervisor import LOOPBACK, ServiceStartError

NeedBinary = Callable[[str], str]

# Serves 200 on /ready from 127.0.0.1:argv[1] (SO_REUSEADDR, as most daemons bind).
HTTP_DAEMON = """
import http.server, sys
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/ready" else 404)
        self.end_headers()
    def log_message(self, *args):
        pass
server = http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
print("serving on", sys.argv[1], flush=True)
server.serve_forever()
"""


def python(tmp_path: Path, name: str, source: str) -> list[str]:
    script = tmp_path / f"{name}.py"
    script.write_text(source)
    return [sys.executable, str(script)]


def http_daemon(tmp_path: Path, attempts: list[int], name: str = "fake",
                log_name: str = "fake.log") -> supervisor.Daemon:
    argv = python(tmp_path, name, HTTP_DAEMON)

    def command(ports: supervisor.Ports) -> list[str]:
        attempts.append(ports[0])
        return [*argv, str(ports[0])]

    return supervisor.start(
        name, command, tmp_path / log_name,
        lambda ports: supervisor.http_ok(f"http://{LOOPBACK}:{ports[0]}/ready"),
        startup_timeout=20)


@pytest.fixture
def held_port() -> Iterator[int]:
    """A loopback port held bound (not listening, no SO_REUSEADDR) by another socket."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind((LOOPBACK, 0))
        yield int(holder.getsockname()[1])


def first_choices(monkeypatch: pytest.MonkeyPatch, *ports: int) -> None:
    """free_port() gives `ports` first (every caller, every thread), then free ones."""
    queue = list(ports)
    lock = threading.Lock()
    real = supervisor.free_port

    def chosen() -> int:
        with lock:
            if queue:
                return queue.pop(0)
        return real()

    monkeypatch.setattr(supervisor, "free_port", chosen)


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as stat:  # a zombie nobody reaped yet is gone too
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def wait_gone(pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while not gone(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


# --- ports ------------------------------------------------------------------------------


def test_it_picks_distinct_free_ports_below_the_ephemeral_range() -> None:
    ports = supervisor.free_ports(5)
    assert len(set(ports)) == 5
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    if low - 10_000 >= 1000:  # room below it: outgoing connections never take these
        assert all(10_000 <= port < low for port in ports)
    for port in ports:
        with socket.socket() as sock:
            sock.bind((LOOPBACK, port))


def test_it_retries_on_a_new_port_when_the_first_is_held_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, held_port: int
) -> None:
    first_choices(monkeypatch, held_port)
    attempts: list[int] = []
    with supervisor.running(http_daemon(tmp_path, attempts)) as daemon:
        assert attempts[0] == held_port and daemon.port == attempts[1] != held_port
        assert len(attempts) == 2
        assert supervisor.http_get(f"http://{LOOPBACK}:{daemon.port}/ready", 5)[0] == 200
        assert "serving on" in daemon.log_tail()  # this start's output only
    assert daemon.poll() is not None and daemon.process not in supervisor._live


def test_two_starts_racing_for_the_same_port_both_come_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As two pytest-xdist workers would: both choose the same free port at the same moment.
    same = supervisor.free_port()
    first_choices(monkeypatch, same, same)
    started: dict[str, supervisor.Daemon] = {}
    attempts: dict[str, list[int]] = {"a": [], "b": []}
    errors: list[BaseException] = []
    barrier = threading.Barrier(2)

    def start(name: str) -> None:
        try:
            barrier.wait(10)
            started[name] = http_daemon(tmp_path, attempts[name], name=name,
                                        log_name=f"{name}.log")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=start, args=(name,)) for name in attempts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    try:
        assert not errors, errors
        assert started["a"].port != started["b"].port
        assert attempts["a"][0] == attempts["b"][0] == same
        assert sorted(len(tried) for tried in attempts.values()) == [1, 2]  # one retried
        for daemon in started.values():
            assert supervisor.http_get(f"http://{LOOPBACK}:{daemon.port}/ready", 5)[0] == 200
    finally:
        for daemon in started.values():
            daemon.stop()


@pytest.mark.integration
def test_two_node_exporters_started_at_once_from_threads_are_apart(
    tmp_path: Path, need_binary: NeedBinary
) -> None:
    need_binary("prometheus-node-exporter")
    services: dict[int, Service] = {}
    errors: list[BaseException] = []
    barrier = threading.Barrier(2)
    release = threading.Event()

    def run(number: int) -> None:
        textfiles = tmp_path / f"textfile-{number}"
        textfiles.mkdir()
        (textfiles / "mine.prom").write_text(f"cw_exporter_number {number}\n")
        try:
            barrier.wait(10)
            with node_exporter(textfiles, log_dir=tmp_path / f"log-{number}") as service:
                services[number] = service
                release.wait(60)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(number,)) for number in (1, 2)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 60
    while len(services) + len(errors) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        assert not errors, errors
        assert services[1].port != services[2].port
        assert services[1].log_path != services[2].log_path
        for number, service in services.items():
            status, body = supervisor.http_get(service.url + "/metrics", 5)
            assert status == 200 and f"cw_exporter_number {number}".encode() in body
    finally:
        release.set()
        for thread in threads:
            thread.join(30)
    assert all(service.process.poll() is not None for service in services.values())


# --- failures -------------------------------------------------------------------------------


def test_a_port_that_stays_taken_fails_after_the_attempts_with_the_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    holders = [socket.socket() for _ in range(supervisor.PORT_ATTEMPTS)]
    try:
        for holder in holders:
            holder.bind((LOOPBACK, 0))
        first_choices(monkeypatch, *(holder.getsockname()[1] for holder in holders))
        attempts: list[int] = []
        with pytest.raises(ServiceStartError) as raised:
            http_daemon(tmp_path, attempts)
    finally:
        for holder in holders:
            holder.close()
    assert len(attempts) == supervisor.PORT_ATTEMPTS
    assert raised.value.name == "fake" and raised.value.port_taken
    # Seen in its log before or after it exited: either way the reason says so.
    assert raised.value.reason.startswith(("exited with status 1", "a port it was given"))
    assert "Address already in use" in raised.value.log_tail
    assert str(raised.value).startswith(f"fake did not start: {raised.value.reason}\n")


def test_a_failure_that_is_not_a_taken_port_is_not_retried(tmp_path: Path) -> None:
    attempts: list[int] = []

    def command(ports: supervisor.Ports) -> list[str]:
        attempts.append(ports[0])
        return [sys.executable, "-c", "print('bad flag --frobnicate'); raise SystemExit(3)"]

    with pytest.raises(ServiceStartError, match="exited with status 3") as raised:
        supervisor.start("fake", command, tmp_path / "fake.log",
                         lambda ports: supervisor.tcp_accepts(ports[0]), startup_timeout=20)
    assert len(attempts) == 1 and not raised.value.port_taken
    assert raised.value.log_tail == "bad flag --frobnicate"


def test_it_stops_a_daemon_that_keeps_retrying_its_bind_at_once(
    tmp_path: Path, held_port: int
) -> None:
    # gunicorn's way: "Connection in use", then it retries by itself for seconds.
    argv = python(tmp_path, "stubborn", "import time\n"
                  "print(\"Connection in use: ('127.0.0.1', 1)\", flush=True)\n"
                  "time.sleep(60)\n")
    started = time.monotonic()
    pids: list[int] = []

    def attempt(ports: supervisor.Ports) -> supervisor.Daemon:
        daemon = supervisor.spawn("stubborn", argv, tmp_path / "stubborn.log", ports=ports)
        pids.append(daemon.pid)
        supervisor.await_ready(daemon, supervisor.tcp_accepts(ports[0]), 30)
        return daemon

    with pytest.raises(ServiceStartError, match=rf"a port it was given \({held_port}\) is "
                       "taken") as raised:
        supervisor.on_free_ports(1, attempt, fixed=(held_port,))
    assert time.monotonic() - started < 20  # not the 30 s start-up timeout
    assert raised.value.port_taken and len(pids) == 1  # the caller's port: tried once
    assert "Connection in use" in str(raised.value)
    assert gone(pids[0])


def test_it_reads_only_what_this_start_appended_to_the_log(tmp_path: Path) -> None:
    log_path = tmp_path / "daemon.log"
    log_path.write_text("an earlier start: bind: address already in use\n")
    attempts: list[int] = []

    def command(ports: supervisor.Ports) -> list[str]:
        attempts.append(ports[0])
        return [sys.executable, "-c", "print('config error'); raise SystemExit(2)"]

    with pytest.raises(ServiceStartError) as raised:
        supervisor.start("fake", command, log_path,
                         lambda ports: supervisor.tcp_accepts(ports[0]), startup_timeout=20,
                         append=True)
    assert len(attempts) == 1 and not raised.value.port_taken
    assert raised.value.log_tail == "config error"
    assert log_path.read_text().startswith("an earlier start")  # kept


def test_a_daemon_never_ready_is_stopped_and_named_with_what_was_awaited(
    tmp_path: Path
) -> None:
    argv = python(tmp_path, "mute", "import time\nprint('waiting', flush=True)\n"
                  "time.sleep(60)\n")
    log_path = tmp_path / "mute.log"

    def never() -> bool:  # once it has said something, however slow the machine is
        deadline = time.monotonic() + 60
        while "waiting" not in log_path.read_text() and time.monotonic() < deadline:
            time.sleep(0.05)
        return False

    with pytest.raises(ServiceStartError, match=r"node not idle within 0.5 s") as raised:
        supervisor.start("mute", lambda ports: argv, log_path,
                         lambda ports: supervisor.Probe(never, "node not idle"),
                         startup_timeout=0.5, ports=0)
    assert raised.value.log_tail == "waiting"
    assert all(process.args != argv for process in supervisor._live)  # stopped, forgotten


def test_its_probes_wait_for_a_tcp_port_and_a_unix_socket(tmp_path: Path) -> None:
    with socket.socket() as listener:
        listener.bind((LOOPBACK, 0))
        probe = supervisor.tcp_accepts(listener.getsockname()[1])
        assert not probe()  # bound, not listening yet
        listener.listen()
        assert probe()
    path = tmp_path / "daemon.socket"
    unix = supervisor.unix_socket(path)
    assert not unix()
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        assert not unix()  # the file exists before anyone listens
        server.listen()
        assert unix()


# --- stop -----------------------------------------------------------------------------------


def test_it_kills_a_daemon_that_ignores_sigterm_after_its_timeout(tmp_path: Path) -> None:
    argv = python(tmp_path, "deaf", "import signal, time\n"
                  "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                  "print('deaf', flush=True)\ntime.sleep(60)\n")
    daemon = supervisor.spawn("deaf", argv, tmp_path / "deaf.log", stop_timeout=0.5)
    supervisor.await_ready(daemon, lambda: "deaf" in daemon.log_tail(), 20)
    started = time.monotonic()
    daemon.stop()
    assert daemon.process.returncode == -signal.SIGKILL
    assert time.monotonic() - started < 10


def test_a_paused_daemon_still_stops_on_sigterm(tmp_path: Path) -> None:
    argv = python(tmp_path, "sleeper", "import time\nprint('up', flush=True)\n"
                  "time.sleep(60)\n")
    daemon = supervisor.spawn("sleeper", argv, tmp_path / "sleeper.log", stop_timeout=30)
    supervisor.await_ready(daemon, lambda: "up" in daemon.log_tail(), 20)
    daemon.process.send_signal(signal.SIGSTOP)
    started = time.monotonic()
    daemon.stop()
    assert daemon.process.returncode == -signal.SIGTERM  # not the SIGKILL 30 s later
    assert time.monotonic() - started < 20


def test_a_forking_daemon_leaves_no_worker_behind(tmp_path: Path) -> None:
    # The leader exits on SIGTERM; its worker ignores SIGTERM, as a stuck worker would.
    argv = python(tmp_path, "forking", "import os, signal, sys, time\n"
                  "pid = os.fork()\n"
                  "if pid == 0:\n"
                  "    signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                  "    time.sleep(60)\n"
                  "    sys.exit(0)\n"
                  "print('worker', pid, flush=True)\n"
                  "time.sleep(60)\n")
    daemon = supervisor.spawn("forking", argv, tmp_path / "forking.log", process_group=True)
    supervisor.await_ready(daemon, lambda: "worker" in daemon.log_tail(), 20)
    worker = int(daemon.log_tail().split()[1])
    assert os.getpgid(worker) == daemon.pid != os.getpgid(0)  # its own group
    daemon.stop()
    assert daemon.process.returncode == -signal.SIGTERM
    assert wait_gone(worker)


def test_what_nobody_stopped_is_stopped_when_the_interpreter_exits(tmp_path: Path) -> None:
    script = ("import sys\nfrom pathlib import Path\n"
              "from clusterwatch.loopback import supervisor\n"
              "daemon = supervisor.spawn('left', [sys.executable, '-c', "
              "'import time; time.sleep(60)'], Path(sys.argv[1]))\n"
              "print(daemon.pid, flush=True)\n")
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "left.log")],
                          capture_output=True, text=True, timeout=60, check=True)
    assert wait_gone(int(done.stdout.split()[0]))


def test_each_start_is_counted_when_asked(tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    counted = tmp_path / "starts"
    monkeypatch.setenv(supervisor.STARTS_ENVIRON, str(counted))
    attempts: list[int] = []
    with supervisor.running(http_daemon(tmp_path, attempts)) as daemon:
        pass
    [line] = counted.read_text().splitlines()
    assert line.split()[1:] == [str(os.getpid()), "fake", str(daemon.port)]
