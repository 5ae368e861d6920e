"""Real Prometheus, node_exporter, Alertmanager and VictoriaMetrics on 127.0.0.1, one context
manager each.

Each service is started by the harness's one supervisor (loopback/supervisor.py): a free
port picked at start (when another process grabs it before the service binds it, the start is
retried with a new one), its output in a log file, ready once its readiness URL answers 200,
stopped (SIGTERM, then SIGKILL) when the `with` block ends, also when the block raises. An
`atexit` hook stops anything a caller forgot. The children stay in the caller's process
group, so a runner that kills the group takes them along.

Configuration files are written as JSON, which YAML parsers read as YAML: no YAML library.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.parse
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

from clusterwatch.loopback import supervisor
from clusterwatch.loopback.supervisor import (  # re-exported: callers import them from here
    LOG_TAIL_LINES,
    LOOPBACK,
    PORT_ATTEMPTS,
    STOP_TIMEOUT,
    ServiceStartError,
    free_port,
    http_get,
    log_tail,
    stop_process,
    track,
)

__all__ = ["LOG_TAIL_LINES", "LOOPBACK", "PORT_ATTEMPTS", "STARTUP_TIMEOUT", "STOP_TIMEOUT",
           "MissingComponent", "Service", "ServiceStartError", "alertmanager", "free_port",
           "log_tail", "make_searchable", "node_exporter", "prometheus", "remote_write_url",
           "require_binary", "stop_process", "track", "vector_rows", "victoria_metrics",
           "wait_for_query"]

STARTUP_TIMEOUT = 30.0  # seconds for a service to answer its readiness URL

# Debian package holding each binary, for the install hint.
_DEBIAN_PACKAGES = {
    "prometheus": "prometheus",
    "promtool": "prometheus",
    "prometheus-node-exporter": "prometheus-node-exporter",
    "prometheus-alertmanager": "prometheus-alertmanager",
    "victoria-metrics": "victoria-metrics",
}
# Upstream release tarballs name two of the binaries differently.
_UPSTREAM_NAMES = {
    "prometheus-node-exporter": "node_exporter",
    "prometheus-alertmanager": "alertmanager",
}
_LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1", "[::1]"}
# The supervisor's record of running processes (the tests check that a stop forgets them).
_live = supervisor._live


class MissingComponent(Exception):
    """A binary the loopback services need is not installed."""

    def __init__(self, name: str, hint: str) -> None:
        super().__init__(f"{name} not found on PATH; {hint}")
        self.name = name
        self.hint = hint


@dataclass(frozen=True)
class Service:
    """A running service: `url` is its base URL, e.g. http://127.0.0.1:40123."""

    name: str
    url: str
    process: subprocess.Popen[bytes]
    log_path: Path

    @property
    def address(self) -> str:
        """host:port, as written in scrape targets and shown in Prometheus' instance label."""
        return urllib.parse.urlsplit(self.url).netloc

    @property
    def port(self) -> int:
        return int(self.address.rsplit(":", 1)[1])

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        return log_tail(self.log_path, lines)


def require_binary(name: str) -> str:
    """Path of the executable `name` (or its upstream name), or raise MissingComponent."""
    for candidate in (name, _UPSTREAM_NAMES.get(name)):
        path = shutil.which(candidate) if candidate else None
        if path:
            return path
    package = _DEBIAN_PACKAGES.get(name)
    if package:
        hint = (
            f"install it with: sudo apt-get install --no-install-recommends {package} "
            "(scripts/test installs it)"
        )
    else:
        hint = f"install the package that provides {name!r} and put it on PATH"
    raise MissingComponent(name, hint)


@contextlib.contextmanager
def node_exporter(
    textfile_dir: Path,
    *,
    extra_args: Sequence[str] = (),
    log_dir: Optional[Path] = None,
    binary: Optional[str] = None,
    startup_timeout: float = STARTUP_TIMEOUT,
) -> Iterator[Service]:
    """node_exporter with only the textfile collector, reading `textfile_dir`.

    The `file` label of node_textfile_mtime_seconds holds the absolute path of each file.
    The log goes to `log_dir` (default: a temporary directory removed afterwards), so that
    `textfile_dir` holds only what the caller writes there.
    """
    exe = binary or require_binary("prometheus-node-exporter")
    directory = os.path.abspath(textfile_dir)

    def command(port: int) -> list[str]:
        return [
            exe,
            f"--web.listen-address={LOOPBACK}:{port}",
            "--collector.disable-defaults",
            "--collector.textfile",
            f"--collector.textfile.directory={directory}",
            *extra_args,
        ]

    with contextlib.ExitStack() as stack:
        if log_dir is None:
            log_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="cw-node-")))
        log_path = Path(log_dir) / "node_exporter.log"
        yield stack.enter_context(
            _running("node_exporter", command, "/metrics", log_path, startup_timeout)
        )


@contextlib.contextmanager
def prometheus(
    scrape_targets: Mapping[str, Sequence[str]],
    workdir: Path,
    scrape_interval: str = "1s",
    alertmanager_url: Optional[str] = None,
    *,
    rule_files: Sequence[Path] = (),
    remote_write: Sequence[str] = (),
    binary: Optional[str] = None,
    startup_timeout: float = STARTUP_TIMEOUT,
) -> Iterator[Service]:
    """Prometheus scraping `{job: ["127.0.0.1:PORT", ...]}`, storage and config in `workdir`.

    `remote_write`: loopback URLs (e.g. `remote_write_url(victoria_metrics(...))`) sent every
    sample Prometheus stores, staleness markers included, in batches of at most one scrape
    interval (Prometheus' default waits 5 s), so another store holds the same samples a
    moment after Prometheus does.

    Ready when /-/ready answers 200; use `wait_for_query` to wait for the first scrapes.
    """
    exe = binary or require_binary("prometheus")
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    config: dict[str, Any] = {
        "global": {"scrape_interval": scrape_interval, "evaluation_interval": scrape_interval},
        "scrape_configs": [
            {
                "job_name": job,
                "static_configs": [{"targets": [_loopback_address(t) for t in targets]}],
            }
            for job, targets in scrape_targets.items()
        ],
    }
    if rule_files:
        config["rule_files"] = [os.path.abspath(path) for path in rule_files]
    if remote_write:
        config["remote_write"] = [
            {"url": _loopback_url(url), "queue_config": {"batch_send_deadline": scrape_interval}}
            for url in remote_write
        ]
    if alertmanager_url is not None:
        parts = urllib.parse.urlsplit(alertmanager_url)
        config["alerting"] = {
            "alertmanagers": [
                {
                    "scheme": parts.scheme or "http",
                    "path_prefix": parts.path or "/",
                    "static_configs": [{"targets": [_loopback_address(parts.netloc)]}],
                }
            ]
        }
    config_path = workdir / "prometheus.yml"
    config_path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")

    def command(port: int) -> list[str]:
        return [
            exe,
            f"--config.file={config_path}",
            f"--storage.tsdb.path={workdir / 'data'}",
            f"--web.listen-address={LOOPBACK}:{port}",
        ]

    with _running(
        "prometheus", command, "/-/ready", workdir / "prometheus.log", startup_timeout
    ) as service:
        yield service


@contextlib.contextmanager
def victoria_metrics(
    workdir: Path,
    *,
    scrape_targets: Optional[Mapping[str, Sequence[str]]] = None,
    scrape_interval: str = "1s",
    retention: str = "1d",
    latency_offset: str = "0s",
    binary: Optional[str] = None,
    startup_timeout: float = STARTUP_TIMEOUT,
) -> Iterator[Service]:
    """A VictoriaMetrics single node (Debian's `victoria-metrics`), storage in `workdir`.

    Fed by remote write (`prometheus(..., remote_write=[remote_write_url(store)])`), or, with
    `scrape_targets`, scraping `{job: ["127.0.0.1:PORT", ...]}` itself every
    `scrape_interval` (-promscrape.config: the same scrape configuration Prometheus reads).
    Its Prometheus query API is under the base URL (`/api/v1/query_range`).

    `latency_offset` (-search.latencyOffset, 30 s by default, 1 s at the least) hides the
    newest samples from queries: a test that reads a job a few seconds after it ended needs
    them all. Every other query setting is VictoriaMetrics' default, as a site runs it (its
    response cache and the grid alignment that comes with it included). Fresh samples answer
    queries once it flushed them (`make_searchable`). Ready when /health answers 200.
    """
    exe = binary or require_binary("victoria-metrics")
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    scrape: list[str] = []
    if scrape_targets is not None:
        config = {
            "global": {"scrape_interval": scrape_interval},
            "scrape_configs": [
                {"job_name": job,
                 "static_configs": [{"targets": [_loopback_address(t) for t in targets]}]}
                for job, targets in scrape_targets.items()
            ],
        }
        config_path = workdir / "scrape.yml"
        config_path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
        scrape = [f"-promscrape.config={config_path}"]

    def command(port: int) -> list[str]:
        return [
            exe,
            f"-httpListenAddr={LOOPBACK}:{port}",
            f"-storageDataPath={workdir / 'data'}",
            f"-retentionPeriod={retention}",
            f"-search.latencyOffset={latency_offset}",
            *scrape,
        ]

    with _running(
        "victoria-metrics", command, "/health", workdir / "victoria-metrics.log", startup_timeout
    ) as service:
        yield service


def remote_write_url(store: Service) -> str:
    """Where Prometheus sends its samples to `store` (VictoriaMetrics' remote write API)."""
    return f"{store.url}/api/v1/write"


def make_searchable(store: Service) -> None:
    """Makes what VictoriaMetrics `store` received so far answer queries now: it does so in
    batches of its own, a new store's first about 10 s after it started."""
    http_get(f"{store.url}/internal/force_flush", timeout=5.0)


@contextlib.contextmanager
def alertmanager(
    workdir: Path,
    webhook_url: Optional[str],
    *,
    binary: Optional[str] = None,
    startup_timeout: float = STARTUP_TIMEOUT,
) -> Iterator[Service]:
    """A single Alertmanager (clustering off) routing every alert to `webhook_url`.

    Notifications are grouped per label set, sent after 1 s, resolved ones included;
    `webhook_url=None` routes to a receiver that drops everything.
    """
    exe = binary or require_binary("prometheus-alertmanager")
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    receiver: dict[str, Any] = {"name": "null"}
    if webhook_url is not None:
        _loopback_address(urllib.parse.urlsplit(webhook_url).netloc)
        receiver = {
            "name": "webhook",
            "webhook_configs": [{"url": webhook_url, "send_resolved": True}],
        }
    config = {
        "route": {
            "receiver": receiver["name"],
            "group_by": ["..."],
            "group_wait": "1s",
            "group_interval": "1s",
            "repeat_interval": "1h",
        },
        "receivers": [receiver],
    }
    config_path = workdir / "alertmanager.yml"
    config_path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")

    def command(port: int) -> list[str]:
        return [
            exe,
            f"--config.file={config_path}",
            f"--storage.path={workdir / 'alertmanager-data'}",
            f"--web.listen-address={LOOPBACK}:{port}",
            "--cluster.listen-address=",  # empty: no gossip port, a lone instance is ready
        ]

    with _running(
        "alertmanager", command, "/-/ready", workdir / "alertmanager.log", startup_timeout
    ) as service:
        yield service


def wait_for_query(
    url: str,
    promql: str,
    predicate: Callable[[Any], bool],
    timeout: float = 30.0,
    interval: float = 0.2,
) -> Any:
    """Poll `url`/api/v1/query with `promql` until `predicate(parsed_json)` holds; return it.

    Raises TimeoutError naming the last answer (or error) after `timeout` seconds.
    """
    query_url = f"{url.rstrip('/')}/api/v1/query?{urllib.parse.urlencode({'query': promql})}"
    deadline = time.monotonic() + timeout
    last: object = None
    while True:
        try:
            _, body = http_get(query_url, timeout=5.0)
            last = json.loads(body)
        except (OSError, ValueError) as exc:  # URLError is an OSError; bad JSON a ValueError
            last = exc
        else:
            if predicate(last):
                return last
        if time.monotonic() >= deadline:
            raise TimeoutError(
                f"{promql!r} not satisfied within {timeout:g} s; last answer: {last!r:.800}"
            )
        time.sleep(interval)


def vector_rows(answer: Any) -> list[dict[str, Any]]:
    """The rows of a successful instant-vector answer, else an empty list."""
    if not isinstance(answer, dict) or answer.get("status") != "success":
        return []
    data = answer.get("data") or {}
    if data.get("resultType") != "vector":
        return []
    return list(data.get("result") or [])


# --- process handling: the supervisor's -------------------------------------------------


@contextlib.contextmanager
def _running(
    name: str,
    command: Callable[[int], list[str]],
    ready_path: str,
    log_path: Path,
    startup_timeout: float,
) -> Iterator[Service]:
    service = _start(name, command, ready_path, log_path, startup_timeout)
    try:
        yield service
    finally:
        stop_process(service.process)


def _start(
    name: str,
    command: Callable[[int], list[str]],
    ready_path: str,
    log_path: Path,
    startup_timeout: float,
) -> Service:
    daemon = supervisor.start(
        name, lambda ports: command(ports[0]), log_path,
        lambda ports: supervisor.http_ok(f"http://{LOOPBACK}:{ports[0]}{ready_path}"),
        startup_timeout=startup_timeout)
    return Service(name=name, url=f"http://{LOOPBACK}:{daemon.port}", process=daemon.process,
                   log_path=log_path)


def _loopback_url(url: str) -> str:
    _loopback_address(urllib.parse.urlsplit(url).netloc)
    return url


def _loopback_address(address: str) -> str:
    host = address.rsplit(":", 1)[0] if ":" in address else address
    if host not in _LOOPBACK_HOSTS:
        raise ValueError(f"loopback services only talk to 127.0.0.1, not {address!r}")
    return address
