"""The loopback VictoriaMetrics (clusterwatch.loopback.services.victoria_metrics): fed both
ways a site feeds one, by Prometheus' remote write and by scraping an exporter itself, and
stopped however the block ends."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any, Callable

import pytest

from clusterwatch.loopback import services
from clusterwatch.loopback.services import (
    Service,
    make_searchable,
    node_exporter,
    prometheus,
    remote_write_url,
    vector_rows,
    victoria_metrics,
    wait_for_query,
)

NeedBinary = Callable[[str], str]


def jobs_of(answer: Any) -> set[str]:
    return {row["metric"].get("job", "") for row in vector_rows(answer)}


def test_it_holds_what_prometheus_remote_writes_and_what_it_scrapes_itself(
        tmp_path: Path, need_binary: NeedBinary) -> None:
    for name in ("victoria-metrics", "prometheus", "prometheus-node-exporter"):
        need_binary(name)
    textfiles = tmp_path / "textfiles"
    textfiles.mkdir()
    (textfiles / "job.prom").write_text('jobs_info{jobid="7"} 1\n')
    with node_exporter(textfiles, log_dir=tmp_path) as exporter, \
            victoria_metrics(tmp_path / "vm", scrape_targets={"scraped": [exporter.address]},
                             ) as store, \
            prometheus({"written": [exporter.address]}, tmp_path / "prometheus",
                       remote_write=[remote_write_url(store)]):
        def both(answer: Any) -> bool:
            make_searchable(store)  # for the next try
            return jobs_of(answer) == {"scraped", "written"}

        answer = wait_for_query(store.url, 'jobs_info{jobid="7"}', both)
    assert {row["value"][1] for row in vector_rows(answer)} == {"1"}
    assert_stopped(store)


def test_it_stops_when_the_block_raises(tmp_path: Path, need_binary: NeedBinary) -> None:
    need_binary("victoria-metrics")
    started: list[Service] = []
    with pytest.raises(RuntimeError, match="the test failed"), \
            victoria_metrics(tmp_path / "vm") as store:
        started.append(store)
        raise RuntimeError("the test failed")
    assert_stopped(started[0])


def test_it_writes_only_to_loopback(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="loopback"), \
            prometheus({}, tmp_path, remote_write=["http://store.example:8428/api/v1/write"],
                       binary="/bin/false"):
        pass
    with pytest.raises(ValueError, match="loopback"), \
            victoria_metrics(tmp_path, scrape_targets={"jobs": ["10.0.0.1:9306"]},
                             binary="/bin/false"):
        pass


def assert_stopped(service: Service) -> None:
    assert service.process.returncode is not None and service.process not in services._live
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", service.port), timeout=2).close()
