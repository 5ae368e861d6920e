"""The HTTP server: /metrics from the registry, IPv4 and IPv6, every address."""

from __future__ import annotations

import socket
import threading
import urllib.request

import pytest
from prometheus_client import CollectorRegistry

from clusterwatch.jobs.exporter import JobsCollector
from clusterwatch.jobs.serve import bind, parse_listen
from tests.jobs.fake_tree import Tree, v2_job

_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def get_metrics(tree: Tree, host: str, url_host: str) -> str:
    registry = CollectorRegistry()
    registry.register(JobsCollector(tree.cgroup, tree.proc, nvml=None))
    server = bind(registry, host, 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://{url_host}:{server.server_port}/metrics"
        with _OPENER.open(url, timeout=10) as response:
            assert response.headers["Content-Type"].startswith("text/plain")
            return str(response.read().decode())
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_it_serves_on_every_ipv4_address(tree: Tree) -> None:
    v2_job(tree, "system.slice/slurmstepd.scope", "job_5")
    host, _ = parse_listen(":0")
    body = get_metrics(tree, host, "127.0.0.1")
    assert 'jobs_cpu_seconds_total{jobid="5",user=""} 7.0' in body


def test_it_serves_on_ipv6_loopback(tree: Tree) -> None:
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        pytest.skip("no IPv6 loopback here")
    host, _ = parse_listen("[::1]:0")
    assert "jobs_exporter_jobs 0.0" in get_metrics(tree, host, "[::1]")
