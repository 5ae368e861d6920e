"""The HTTP server: /metrics from the collector, IPv4 and IPv6, every address, and answers
identical to prometheus_client's WSGI app for every Accept and Accept-Encoding."""

from __future__ import annotations

import gzip
import io
import socket
import threading
import urllib.request
from collections.abc import Iterable
from typing import Any, Optional

import pytest
from prometheus_client import CollectorRegistry, make_wsgi_app

from clusterwatch.jobs import exposition
from clusterwatch.jobs.exporter import JobsCollector
from clusterwatch.jobs.serve import bind, metrics_app, parse_listen
from tests.jobs.fake_jobs import every_kind_of_job
from tests.jobs.fake_tree import Tree, v2_job

_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))
PROMETHEUS_2 = ("application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
                "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1")


def get_metrics(tree: Tree, host: str, url_host: str) -> str:
    server = bind(JobsCollector(tree.cgroup, tree.proc, nvml=None), host, 0)
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


def call(app: Any, method: str = "GET", accept: Optional[str] = None,
         encoding: Optional[str] = None, query: str = "") -> tuple[str, list[Any], bytes]:
    environ: dict[str, Any] = {
        "REQUEST_METHOD": method, "PATH_INFO": "/metrics", "QUERY_STRING": query,
        "wsgi.input": io.BytesIO(b""),
    }
    if accept is not None:
        environ["HTTP_ACCEPT"] = accept
    if encoding is not None:
        environ["HTTP_ACCEPT_ENCODING"] = encoding
    answer: dict[str, Any] = {}

    def start_response(status: str, headers: list[Any]) -> None:
        answer.update(status=status, headers=headers)

    body: Iterable[bytes] = app(environ, start_response)
    return answer["status"], answer["headers"], b"".join(body)


def without_duration(body: bytes) -> bytes:
    """What differs between two collections: their duration, and the failed NVML reading
    every collection counts again."""
    return b"".join(line for line in io.BytesIO(body) if line.startswith(b"#") or not (
        b"collect_duration" in line or b"collect__duration" in line  # escaping=dots
        or b'{kind="gpu"}' in line))


@pytest.mark.parametrize(("accept", "fmt"), [
    (None, exposition.TEXT),
    ("text/plain;version=0.0.4", exposition.TEXT),
    ("text/plain;version=1.0.0;escaping=allow-utf-8", exposition.TEXT),
    (PROMETHEUS_2, exposition.OPENMETRICS),
    ("application/openmetrics-text;version=1.0.0;escaping=allow-utf-8", exposition.OPENMETRICS),
    ("text/plain;version=1.0.0;escaping=dots", None),  # written by prometheus_client
    ("application/openmetrics-text;version=2.0.0", None),
])
@pytest.mark.parametrize("encoding", [None, "gzip"])
def test_it_answers_as_prometheus_client_does(
        tree: Tree, accept: Optional[str], fmt: Optional[str], encoding: Optional[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    collector = every_kind_of_job(tree)
    registry = CollectorRegistry()
    registry.register(collector)
    written: list[str] = []
    render = exposition.render

    def recording(samples: Any, own: Any, fmt: str) -> bytes:
        written.append(fmt)
        return render(samples, own, fmt)

    monkeypatch.setattr(exposition, "render", recording)
    ours = call(metrics_app(collector), accept=accept, encoding=encoding)
    theirs = call(make_wsgi_app(registry), accept=accept, encoding=encoding)
    assert written == ([fmt] if fmt else [])
    assert ours[:2] == theirs[:2]
    bodies = [answer[2] for answer in (ours, theirs)]
    if encoding == "gzip":
        bodies = [gzip.decompress(body) for body in bodies]
    assert without_duration(bodies[0]) == without_duration(bodies[1])
    assert b'processes{jobid="42"' in bodies[0]


@pytest.mark.parametrize(("method", "query"), [("OPTIONS", ""), ("POST", ""),
                                               ("GET", "name[]=jobs_processes")])
def test_it_leaves_other_requests_to_prometheus_client(tree: Tree, method: str,
                                                       query: str) -> None:
    collector = every_kind_of_job(tree)
    registry = CollectorRegistry()
    registry.register(collector)
    ours = call(metrics_app(collector), method=method, query=query)
    theirs = call(make_wsgi_app(registry), method=method, query=query)
    assert ours[:2] == theirs[:2]
    assert without_duration(ours[2]) == without_duration(theirs[2])
