"""A worker's SQLite connection kept between requests (CONN_MAX_AGE, core/database_url.py):
reused, never holding a transaction a request left open, one per thread and per gunicorn
worker, none in gunicorn's master."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from clusterwatch.loopback.monitor_server import MonitorServer
from clusterwatch.monitor.core import database_url
from tests.monitor.served_support import now, post, record_body, token_for
from tests.support.monitor_console import console_environ, copy_migrated

REPO = Path(__file__).resolve().parents[3]


def test_both_databases_keep_connections_for_the_same_age() -> None:
    sqlite = database_url.parse("sqlite:///srv/monitor.sqlite3")
    postgresql = database_url.parse("postgresql://u@h/db")
    assert sqlite["CONN_MAX_AGE"] == postgresql["CONN_MAX_AGE"] == 60
    assert database_url.sqlite(Path("/srv/m.sqlite3"))["CONN_MAX_AGE"] == 60
    assert "CONN_HEALTH_CHECKS" not in sqlite and postgresql["CONN_HEALTH_CHECKS"] is True


@pytest.fixture(scope="module")
def seen(tmp_path_factory: pytest.TempPathFactory, migrated_sqlite: Path) -> Any:
    """What tests/monitor/ingest/kept_connection_worker.py observed, on SQLite whichever pass."""
    data = copy_migrated(migrated_sqlite, tmp_path_factory.mktemp("kept") / "data")
    environ = console_environ(data, {
        "DJANGO_SETTINGS_MODULE": "clusterwatch.monitor.site.settings",
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])})
    done = subprocess.run([sys.executable, "-m", "tests.monitor.ingest.kept_connection_worker"],
                          env=environ, cwd=REPO, capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_worker_opens_one_connection_for_its_requests(seen: Any) -> None:
    assert seen["statuses"] == [201, 201, 201]
    assert seen["kept"] == {"opened": 1, "open_after": True}


@pytest.mark.parametrize("view, status", [("failing", 500), ("unfinished", 200)])
def test_a_request_that_leaves_a_transaction_open_leaves_no_connection(
        seen: Any, view: str, status: int) -> None:
    # Closed, so rolled back: its uncommitted UPDATE is gone, and no lock is left to others.
    assert seen[view] == {"status": status, "open_after": False, "writable": True,
                          "sizes": seen["posted_sizes"]}


def test_the_next_request_connects_again_and_stores(seen: Any) -> None:
    assert seen["after"] == {"status": 201, "opened": 3}


def test_each_thread_has_its_own_connection_kept_for_its_requests(seen: Any) -> None:
    assert seen["threads"] == ["worker-thread-0", "worker-thread-1"]  # 2 posts each


def _database_holders(pids: list[int], database: Path) -> set[int]:
    holders = set()
    for pid in pids:
        fd_dir = Path(f"/proc/{pid}/fd")
        for fd in fd_dir.iterdir():
            try:
                if os.readlink(fd) == str(database):
                    holders.add(pid)
            except OSError:
                continue  # closed meanwhile
    return holders


def _children(pid: int) -> list[int]:
    text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    return [int(child) for child in text.split()]


@pytest.mark.integration
def test_gunicorn_workers_each_keep_their_own_and_the_master_none(
        served_monitor: MonitorServer) -> None:
    url = served_monitor.environ.get("CLUSTERWATCH_DATABASE_URL", "")
    if not url.startswith("sqlite:"):
        pytest.skip("the SQLite pass's subject")
    database = Path(database_url.parse(url)["NAME"]).resolve()
    key = "keptconn02"
    token = token_for(served_monitor, key)
    workers = _children(served_monitor.process.pid)
    for minute in range(3 * len(workers)):
        at = now() - dt.timedelta(minutes=60 - minute)
        answer = post(served_monitor, key, token, record_body(key, at))
        assert answer.status == 201, answer.body
    # A worker closes a connection it does not keep just after its answer went out (the
    # request's end): a second later only kept connections are left.
    time.sleep(1)
    holders = _database_holders(workers, database)
    assert holders  # a worker that served keeps its connection after the request
    assert served_monitor.process.pid not in _database_holders([served_monitor.process.pid],
                                                               database)
