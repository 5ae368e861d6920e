from __future__ import annotations

import json
import os
import socket
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any, Callable

import pytest

from clusterwatch.atomic_write import write_atomically
from clusterwatch.loopback import services, supervisor
from clusterwatch.loopback.http_recorder import HttpRecorder
from clusterwatch.loopback.services import (
    MissingComponent,
    Service,
    ServiceStartError,
    alertmanager,
    node_exporter,
    prometheus,
    require_binary,
    vector_rows,
    wait_for_query,
)

NeedBinary = Callable[[str], str]
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def http_get(url: str) -> tuple[int, bytes]:
    with _OPENER.open(url, timeout=5) as response:
        return response.status, response.read()


def post_json(url: str, payload: Any) -> int:
    request = urllib.request.Request(
        url,
        data=json.dumps(payload).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with _OPENER.open(request, timeout=5) as response:
        return int(response.status)


def assert_stopped(service: Service) -> None:
    assert service.process.returncode is not None, "process still running"
    assert service.process not in services._live
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", service.port), timeout=2).close()
    # A new server could take the port (TIME_WAIT leftovers are what SO_REUSEADDR is for).
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", service.port))


def fake_binary(tmp_path: Path, body: str) -> str:
    script = tmp_path / "fake-service"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(0o755)
    return str(script)


# --- without real services -------------------------------------------------------------


def test_it_names_the_debian_package_when_a_binary_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(MissingComponent) as raised:
        require_binary("prometheus-node-exporter")
    assert raised.value.name == "prometheus-node-exporter"
    assert "apt-get install --no-install-recommends prometheus-node-exporter" in raised.value.hint


@pytest.mark.parametrize(
    ("ci", "outcome"), [("true", pytest.fail.Exception), ("", pytest.skip.Exception)]
)
def test_a_missing_binary_fails_under_ci_and_skips_elsewhere(
    ci: str,
    outcome: type[BaseException],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    need_binary: NeedBinary,
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("CI", ci)
    with pytest.raises(outcome, match="apt-get install --no-install-recommends prometheus"):
        need_binary("prometheus")


def test_it_accepts_the_upstream_binary_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    upstream = Path(fake_binary(tmp_path, "exit 0")).rename(tmp_path / "alertmanager")
    monkeypatch.setenv("PATH", str(tmp_path))
    assert require_binary("prometheus-alertmanager") == str(upstream)


def test_it_reports_a_crashed_start_with_the_log_tail(tmp_path: Path) -> None:
    binary = fake_binary(tmp_path, 'echo "level=error msg=\\"bad flag $1\\""; exit 3')
    with pytest.raises(ServiceStartError) as raised, node_exporter(tmp_path, binary=binary):
        pytest.fail("must not start")
    message = str(raised.value)
    assert "exited with status 3" in message
    assert "bad flag --web.listen-address=127.0.0.1:" in message


def test_it_kills_a_service_that_never_becomes_ready(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    binary = fake_binary(tmp_path, f"echo $$ > {pid_file}; echo waiting; exec sleep 60")
    started = time.monotonic()
    never_ready = node_exporter(tmp_path, binary=binary, startup_timeout=1)
    with pytest.raises(ServiceStartError, match="not ready within 1 s") as raised, never_ready:
        pytest.fail("must not start")
    assert time.monotonic() - started < 15
    assert "waiting" in raised.value.log_tail
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)


def test_it_stops_the_service_when_the_block_raises(tmp_path: Path) -> None:
    www = tmp_path / "www"
    www.mkdir()
    (www / "metrics").write_text("up 1\n")
    binary = fake_binary(
        tmp_path,
        'port=$(echo "$1" | sed "s/.*://")\n'
        f'exec {sys.executable} -m http.server --bind 127.0.0.1 --directory {www} "$port"',
    )
    seen: list[Service] = []
    exporter = node_exporter(tmp_path / "tf", binary=binary, log_dir=tmp_path)
    with pytest.raises(RuntimeError, match="test failed"), exporter as service:
        seen.append(service)
        assert http_get(service.url + "/metrics") == (200, b"up 1\n")
        raise RuntimeError("test failed")
    assert_stopped(seen[0])


def test_it_refuses_non_loopback_scrape_targets(tmp_path: Path) -> None:
    remote = prometheus({"node": ["192.0.2.10:9100"]}, tmp_path, binary="/bin/false")
    with pytest.raises(ValueError, match="loopback"), remote:
        pytest.fail("must not start")


# --- real services ----------------------------------------------------------------------


@pytest.mark.integration
def test_it_serves_node_exporter_metrics_and_stops(tmp_path: Path, need_binary: NeedBinary) -> None:
    need_binary("prometheus-node-exporter")
    with node_exporter(tmp_path) as exporter:
        status, body = http_get(exporter.url + "/metrics")
        assert status == 200
        assert b'node_scrape_collector_success{collector="textfile"} 1' in body
        assert b'collector="cpu"' not in body  # the defaults are off
    assert_stopped(exporter)
    assert list(tmp_path.iterdir()) == []  # the log went elsewhere


@pytest.mark.integration
def test_it_retries_with_another_port_when_the_port_was_taken(
    tmp_path: Path, need_binary: NeedBinary, monkeypatch: pytest.MonkeyPatch
) -> None:
    need_binary("prometheus-node-exporter")
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        taken = squatter.getsockname()[1]
        ports = iter([taken])
        real_free_port = supervisor.free_port
        monkeypatch.setattr(supervisor, "free_port",
                            lambda: next(ports, None) or real_free_port())
        with node_exporter(tmp_path) as exporter:
            assert exporter.port != taken
            assert http_get(exporter.url + "/metrics")[0] == 200


@pytest.mark.integration
def test_it_shows_a_textfile_mtime_in_prometheus_with_the_full_path(
    tmp_path: Path, need_binary: NeedBinary
) -> None:
    need_binary("prometheus-node-exporter")
    need_binary("prometheus")
    textfiles = tmp_path / "textfile"
    textfiles.mkdir()
    vram_file = textfiles / "gpu_vram.prom"
    write_atomically(vram_file, b'gpu_vram_free_bytes{uuid="GPU-1"} 0\n', durable=False)
    mtime = vram_file.stat().st_mtime

    with node_exporter(textfiles) as exporter:
        targets = {"node": [exporter.address]}
        with prometheus(targets, tmp_path / "prometheus") as prom:
            query = 'node_textfile_mtime_seconds{job="node"}'
            answer = wait_for_query(prom.url, query, lambda a: len(vector_rows(a)) == 1)
            [row] = vector_rows(answer)
            assert row["metric"]["file"] == str(vram_file)
            assert row["metric"]["instance"] == exporter.address
            assert float(row["value"][1]) == pytest.approx(mtime, abs=1)
            assert (tmp_path / "prometheus" / "prometheus.log").exists()
    assert_stopped(exporter)
    assert_stopped(prom)


@pytest.mark.integration
def test_it_forwards_alerts_from_alertmanager_to_the_webhook(
    tmp_path: Path, need_binary: NeedBinary
) -> None:
    need_binary("prometheus-alertmanager")
    labels = {"alertname": "NodeMissing", "target": "node:worker.example.org"}
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())

    receiver = HttpRecorder()
    with receiver, alertmanager(tmp_path, receiver.url + "/alertmanager") as manager:
        assert post_json(manager.url + "/api/v2/alerts", [{"labels": labels}]) == 200
        [firing] = receiver.wait_for(lambda r: r.json()["status"] == "firing", timeout=20)
        assert firing.method == "POST"
        assert firing.path == "/alertmanager"
        assert firing.json()["alerts"][0]["labels"] == labels

        resolved_alert = {"labels": labels, "startsAt": now, "endsAt": now}
        assert post_json(manager.url + "/api/v2/alerts", [resolved_alert]) == 200
        receiver.wait_for(lambda r: r.json()["status"] == "resolved", timeout=20)
    assert_stopped(manager)


@pytest.mark.integration
def test_it_runs_alertmanager_without_a_webhook(tmp_path: Path, need_binary: NeedBinary) -> None:
    need_binary("prometheus-alertmanager")
    with alertmanager(tmp_path, None) as manager:
        assert http_get(manager.url + "/-/ready")[0] == 200
        assert post_json(manager.url + "/api/v2/alerts", [{"labels": {"alertname": "X"}}]) == 200
    assert_stopped(manager)


@pytest.mark.integration
def test_it_points_prometheus_at_alertmanager(tmp_path: Path, need_binary: NeedBinary) -> None:
    need_binary("prometheus")
    need_binary("prometheus-alertmanager")
    with alertmanager(tmp_path / "am", None) as manager:
        prom_dir = tmp_path / "prom"
        with prometheus({}, prom_dir, alertmanager_url=manager.url) as prom:
            answer = wait_for_query(prom.url, "vector(1)", lambda a: len(vector_rows(a)) == 1)
            assert vector_rows(answer)[0]["value"][1] == "1"
            active = wait_for_active_alertmanagers(prom)
            assert [a["url"] for a in active] == [manager.url + "/api/v2/alerts"]


def wait_for_active_alertmanagers(prom: Service, timeout: float = 20) -> list[Any]:
    deadline = time.monotonic() + timeout
    while True:
        _, body = http_get(prom.url + "/api/v1/alertmanagers")
        active: list[Any] = json.loads(body)["data"]["activeAlertmanagers"]
        if active or time.monotonic() > deadline:
            return active
        time.sleep(0.2)
