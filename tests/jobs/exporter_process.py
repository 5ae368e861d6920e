"""`clusterwatch jobs` as users run it: the installed console script, in a subprocess.

`collect(...)` runs `clusterwatch jobs collect` once; `served(...)` starts `clusterwatch
jobs serve` on a free loopback port and stops it (SIGTERM) at the end of the `with` block.
Both can run the exporter without the capabilities that bypass file permissions
(`unprivileged=True`): when the tests run as root, through setpriv, which drops
CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH from the exporter's bounding set, so that it keeps
uid 0 (it can still run an interpreter installed under /root) but a file or directory of
mode 000 is closed to it as to anyone; otherwise the tests' own user has neither already.
And under a limit on its address space (`memory_limit`).
"""

from __future__ import annotations

import contextlib
import http.client
import os
import resource
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from prometheus_client.parser import text_string_to_metric_families

from clusterwatch.loopback import supervisor
from tests.jobs.fake_tree import Tree

START_TIMEOUT_S = 20.0
SeriesKey = tuple[str, frozenset[tuple[str, str]]]


def console_script(need_binary: Callable[[str], str]) -> str:
    """The installed `clusterwatch` beside this interpreter (a missing one fails under CI)."""
    installed = Path(sys.executable).with_name("clusterwatch")
    if installed.is_file():
        return str(installed)
    return need_binary("clusterwatch")


@dataclass
class Exporter:
    """A running `clusterwatch jobs serve`."""

    process: subprocess.Popen[bytes]
    port: int
    log_path: Path

    def request(self, target: str = "/metrics",
                headers: Optional[Mapping[str, str]] = None,
                timeout: float = 30) -> tuple[int, http.client.HTTPMessage, bytes]:
        """GET `target`: status, headers, body (as sent: gzip stays compressed)."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            connection.request("GET", target, headers=dict(headers or {}))
            response = connection.getresponse()
            return response.status, response.headers, response.read()
        finally:
            connection.close()

    def scrape(self) -> dict[SeriesKey, float]:
        status, _, body = self.request()
        assert status == 200, (status, body[:500], self.log())
        return series(body.decode("utf-8"))

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def series(text: str) -> dict[SeriesKey, float]:
    """Every sample of an exposition, by name and labels."""
    return {(sample.name, frozenset(sample.labels.items())): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}


def value(samples: Mapping[SeriesKey, float], name: str,
          **labels: str) -> Optional[float]:
    return samples.get((name, frozenset(labels.items())))


def job_series(samples: Mapping[SeriesKey, float], jobid: str) -> dict[str, float]:
    """The job's samples by name (the per-core and GPU ones are left out)."""
    return {name: sample_value for (name, labels), sample_value in samples.items()
            if ("jobid", jobid) in labels and not {"core", "gpu_uuid"} & dict(labels).keys()}


def _command(script: str, verb: str, tree: Tree, unprivileged: bool,
             need_binary: Callable[[str], str], extra: Sequence[str]) -> list[str]:
    command = [script, "-v", "jobs", verb, "--cgroup-root", str(tree.cgroup),
               "--proc-root", str(tree.proc), *extra]
    if unprivileged and os.geteuid() == 0:
        command = [need_binary("setpriv"), "--bounding-set=-dac_override,-dac_read_search",
                   *command]
    return command


def _limits(memory_limit: Optional[int]) -> Optional[Callable[[], None]]:
    if memory_limit is None:
        return None

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))

    return limit


def collect(tree: Tree, need_binary: Callable[[str], str], *, unprivileged: bool = False,
            memory_limit: Optional[int] = None,
            timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """`clusterwatch jobs collect` on the tree; its exit status, stdout and stderr."""
    command = _command(console_script(need_binary), "collect", tree, unprivileged,
                       need_binary, ())
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                          check=False, preexec_fn=_limits(memory_limit))


@contextlib.contextmanager
def served(tree: Tree, need_binary: Callable[[str], str], log_dir: Path, *,
           unprivileged: bool = False, memory_limit: Optional[int] = None) -> Iterator[Exporter]:
    """`clusterwatch jobs serve` on the tree, up (its port accepts connections) until the
    block ends; then stopped with SIGTERM, which must end it with status 0. Being up is
    checked with bare connections, which never cost a collection."""
    def command(port: int) -> list[str]:
        return _command(console_script(need_binary), "serve", tree, unprivileged, need_binary,
                        ["--listen", f"127.0.0.1:{port}"])

    with serving(command, lambda port: log_dir / f"serve-{port}.log",
                 _limits(memory_limit)) as exporter:
        yield exporter


@contextlib.contextmanager
def serving(command: Callable[[int], list[str]], log_path: Callable[[int], Path],
            preexec_fn: Optional[Callable[[], None]] = None) -> Iterator[Exporter]:
    """`command(port)` (a `clusterwatch jobs serve` listening on 127.0.0.1:port) on a free
    port, its output in `log_path(port)`, up until the block ends; then stopped with
    SIGTERM, which must end it with status 0. Started by the loopback harness's supervisor:
    again on another port when something took the port between the probe and serve's bind;
    a serve that exits or does not listen raises its ServiceStartError, with its log."""
    exporter = _start(command, log_path, preexec_fn)
    try:
        yield exporter
        exporter.process.terminate()
        assert exporter.process.wait(10) == 0, exporter.log()
    finally:
        supervisor.stop_process(exporter.process)


def _start(command: Callable[[int], list[str]], log_path: Callable[[int], Path],
           preexec_fn: Optional[Callable[[], None]]) -> Exporter:
    def attempt(ports: supervisor.Ports) -> Exporter:
        daemon = supervisor.spawn("clusterwatch jobs serve", command(ports[0]),
                                  log_path(ports[0]), ports=ports, preexec_fn=preexec_fn)
        # Bare connections: being up never costs a collection.
        supervisor.await_ready(daemon, supervisor.tcp_accepts(ports[0]), START_TIMEOUT_S)
        return Exporter(daemon.process, daemon.port, daemon.log_path)

    return supervisor.on_free_ports(1, attempt)
