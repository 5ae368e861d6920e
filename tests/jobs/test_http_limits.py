"""`clusterwatch jobs serve` over real sockets against clients that are not Prometheus:
half-sent requests, bursts of scrapes, idle and trickling connections; and the query and
header details a scraper may send (`name[]` filters, `Accept-Encoding` q-values).

Collections are counted through the exporter's own errors: the fixture's job lists a PID
that has no /proc entry, so every collection adds exactly one `process_vanished`.
"""

from __future__ import annotations

import gzip
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Callable

import pytest
from prometheus_client.parser import text_string_to_metric_families

from clusterwatch.jobs.http_server import MAX_CONNECTIONS, REQUEST_TIMEOUT_S
from tests.jobs.exporter_process import Exporter, job_series, served, value
from tests.jobs.fake_tree import Tree, v1_slurm_job, v2_job

VANISHED_PID = 999
REQUEST = b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: test\r\n\r\n"


@pytest.fixture
def exporter(tree: Tree, need_binary: Callable[[str], str],
             tmp_path: Path) -> Iterator[Exporter]:
    v1_slurm_job(tree, "42", tasks={"step_0/task_0": [101, VANISHED_PID]})
    v2_job(tree, "system.slice/slurmstepd.scope", "job_43", tasks={"step_0/user/task_0": [102]})
    tree.process(101)
    tree.process(102, environ={"SLURM_JOB_ID": "43"})
    with served(tree, need_binary, tmp_path) as running:
        yield running


def collections(exporter: Exporter) -> float:
    """Collections so far, this scrape's included."""
    counted = value(exporter.scrape(), "jobs_exporter_errors_total", kind="process_vanished")
    assert counted is not None
    return counted


def connect(exporter: Exporter) -> socket.socket:
    return socket.create_connection(("127.0.0.1", exporter.port), timeout=30)


def closed_by_server(sock: socket.socket, within: float) -> bool:
    """Whether the server closes the connection within `within` seconds (anything it
    sends first is read and ignored)."""
    deadline = time.monotonic() + within
    while (remaining := deadline - time.monotonic()) > 0:
        sock.settimeout(remaining)
        try:
            if not sock.recv(65536):
                return True
        except ConnectionResetError:
            return True
        except TimeoutError:
            return False
    return False


def test_it_collects_only_for_complete_requests(exporter: Exporter) -> None:
    before = collections(exporter)
    half_sent = [b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n", b"GET /metrics HTTP/1.0\r\n",
                 b"GET /metrics"]
    for number in range(10):
        with connect(exporter) as sock:
            sock.sendall(half_sent[number % len(half_sent)])
    time.sleep(1)  # time to serve them, if they were served
    assert collections(exporter) == before + 1


def test_it_answers_a_request_that_arrives_in_pieces(exporter: Exporter) -> None:
    with connect(exporter) as sock:
        for piece in (REQUEST[:10], REQUEST[10:30], REQUEST[30:]):
            sock.sendall(piece)
            time.sleep(0.3)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.0 200 OK"), answer[:200]
    assert b'jobs_processes{jobid="43"' in answer


def test_concurrent_scrapes_share_one_collection(exporter: Exporter, tree: Tree) -> None:
    # A job of 3,000 empty task cgroups: each collection lists them all (tens of ms), long
    # enough for a burst of scrapes to arrive while one runs.
    job = tree.cgroup / "freezer/slurm/uid_4242/job_42"
    for step in range(1, 1001):
        for task in range(3):
            directory = job / f"step_{step}/task_{task}"
            directory.mkdir(parents=True)
            (directory / "cgroup.procs").write_text("")
    before = collections(exporter)
    scrapers = 8
    start = threading.Barrier(scrapers)
    statuses: list[int] = []

    def scrape() -> None:
        start.wait()
        statuses.append(exporter.request()[0])

    threads = [threading.Thread(target=scrape) for _ in range(scrapers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert statuses == [200] * scrapers
    burst = collections(exporter) - before - 1
    assert 1 <= burst <= scrapers // 2, burst


def test_it_bounds_connections_and_closes_idle_and_trickling_ones(exporter: Exporter) -> None:
    pid = exporter.process.pid
    exporter.scrape()
    fds_before = len(os.listdir(f"/proc/{pid}/fd"))
    trickling = connect(exporter)
    trickling_since = time.monotonic()
    stop_trickling = threading.Event()

    def trickle() -> None:  # a byte every half second: each read is quick, the whole is not
        for byte in REQUEST:
            if stop_trickling.wait(0.5):
                return
            try:
                trickling.send(bytes([byte]))
            except OSError:
                return

    trickler = threading.Thread(target=trickle, daemon=True)
    trickler.start()
    idle = [connect(exporter) for _ in range(3 * MAX_CONNECTIONS)]
    try:
        time.sleep(1)
        assert server_threads(pid) <= MAX_CONNECTIONS + 1  # the connections' and the main one
        assert len(os.listdir(f"/proc/{pid}/fd")) <= fds_before + MAX_CONNECTIONS
        # Those beyond the limit were closed at once.
        assert sum(closed_by_server(sock, 0.05) for sock in idle) >= len(idle) - MAX_CONNECTIONS
        # The rest, and the trickling one, at the deadline of their request.
        assert closed_by_server(trickling, REQUEST_TIMEOUT_S + 5)
        assert time.monotonic() - trickling_since < REQUEST_TIMEOUT_S + 5
        assert all(closed_by_server(sock, 5) for sock in idle)
        assert exporter.request()[0] == 200
        # A connection's thread ends a moment after it closed the socket (on a loaded
        # machine, possibly after this test has read its answer): wait for them to go.
        assert threads_settle(pid, 2, within=10) <= 2
    finally:
        stop_trickling.set()
        trickling.close()
        for sock in idle:
            sock.close()


def server_threads(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("Threads:"))


def threads_settle(pid: int, at_most: int, within: float) -> int:
    """The server's thread count once it is `at_most` or fewer, or after `within` seconds."""
    deadline = time.monotonic() + within
    while (threads := server_threads(pid)) > at_most and time.monotonic() < deadline:
        time.sleep(0.05)
    return threads


def test_it_serves_name_filters(exporter: Exporter) -> None:
    status, _, body = exporter.request("/metrics?name[]=jobs_processes&name[]=jobs_exporter_jobs")
    assert status == 200
    families = {family.name: family for family in text_string_to_metric_families(body.decode())}
    assert set(families) == {"jobs_processes", "jobs_exporter_jobs"}
    assert {s.labels["jobid"] for s in families["jobs_processes"].samples} == {"42", "43"}


@pytest.mark.parametrize(("accept_encoding", "compressed"), [
    ("gzip", True), ("gzip;q=0.5, identity", True), ("deflate, GZIP ;Q=1", True),
    ("gzip;q=0", False), ("GZIP; Q=0.000", False), ("identity", False),
    ("gzip;q=0, *;q=1", False), ("gzip;q=nonsense", False),
])
@pytest.mark.parametrize("accept", ["", "application/openmetrics-text;version=2.0.0"],
                         ids=["written here", "written by prometheus_client"])
def test_it_honours_gzip_q_values(exporter: Exporter, accept_encoding: str,
                                  compressed: bool, accept: str) -> None:
    headers = {"Accept-Encoding": accept_encoding}
    if accept:
        headers["Accept"] = accept
    status, response_headers, body = exporter.request(headers=headers)
    assert status == 200
    assert (response_headers.get("Content-Encoding") == "gzip") == compressed
    text = (gzip.decompress(body) if compressed else body).decode()
    assert job_series({(name, frozenset(labels.items())): sample_value
                       for name, labels, sample_value in _samples(text)}, "43")


def _samples(text: str) -> Iterator[tuple[str, dict[str, str], float]]:
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            yield sample.name, sample.labels, sample.value
