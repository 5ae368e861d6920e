"""A reporter run killed with SIGKILL at any point counts every log line exactly once.

The zipapp runs in a child process that kills itself at the Nth call of one of the steps
that matter (creating, syncing, renaming and removing files; sending a post and reading its
answer). The test walks N from 1 until a run completes, so every such point between
collecting the record and saving the log positions, and in delivery, is hit once; after each
kill, ordinary runs carry on, and what the monitor received is added up. The monitor stores
a record identical to one it has (a retry) once, so identical posts count once here too.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from clusterwatch.reporter import main as reporter_main

from .test_build import app  # noqa: F401 - the zipapp, built once per module
from .test_main import FETCH_OK, Host
from .tls import MonitorServer

LINES = 3

CHILD = textwrap.dedent(
    """
    import http.client, os, runpy, signal, sys, tempfile
    kill_at, app = int(sys.argv[1]), sys.argv[2]
    calls = [0]

    def killing(real):
        def wrapper(*args, **kwargs):
            calls[0] += 1
            if calls[0] == kill_at:
                sys.stderr.write("killed at %s\\n" % real.__name__)
                sys.stderr.flush()
                os.kill(os.getpid(), signal.SIGKILL)
            return real(*args, **kwargs)
        return wrapper

    os.replace = killing(os.replace)
    os.rename = killing(os.rename)
    os.unlink = killing(os.unlink)
    os.fsync = killing(os.fsync)
    tempfile.mkstemp = killing(tempfile.mkstemp)
    http.client.HTTPConnection.request = killing(http.client.HTTPConnection.request)
    http.client.HTTPConnection.getresponse = killing(http.client.HTTPConnection.getresponse)
    sys.argv = [app] + sys.argv[3:]
    try:
        runpy.run_path(app, run_name="__main__")
    finally:
        sys.stderr.write("completed after %d calls\\n" % calls[0])
    """
)


def run_killed_at(program: Path, host: Host, kill_at: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", CHILD, str(kill_at), str(program),
                           *host.args()],
                          capture_output=True, text=True, timeout=60, check=False)


def distinct_records(monitor: MonitorServer) -> list[dict[str, Any]]:
    """What the monitor keeps: a post identical to an earlier one is the same record."""
    kept: dict[str, dict[str, Any]] = {}
    for post in monitor.posts:
        record = json.loads(post.body)
        kept.setdefault(json.dumps(record, sort_keys=True), record)
    return list(kept.values())


def attempts(records: list[dict[str, Any]]) -> int:
    return sum(record["fetching"].get("queues", {}).get("BNL_PanDA_1", {}).get("attempts", 0)
               for record in records)


def test_it_counts_every_line_once_when_killed_at_any_point(tmp_path: Path,
                                                            app: Path) -> None:  # noqa: F811
    kill_at = 1
    while True:
        root = tmp_path / f"kill-{kill_at}"
        root.mkdir()
        host = Host(root)
        with MonitorServer(None) as monitor:
            host.configure(monitor.start().url)
            assert reporter_main.main(host.args()) == 0  # first run: positions only
            host.append("".join(FETCH_OK.format(t=f"2026-10-02 18:2{n}:44")
                                for n in range(LINES)))
            child = run_killed_at(app, host, kill_at)
            completed = child.returncode == 0
            if not completed:
                assert child.returncode == -signal.SIGKILL, child.stderr
            for _ in range(2):  # cron carries on
                assert reporter_main.main(host.args()) == 0
        json.loads((host.state / "state.json").read_text())  # whole, never half written
        records = distinct_records(monitor)
        assert attempts(records) == LINES, (child.stderr, [r["fetching"] for r in records])
        assert not list((host.state / "buffer").glob("*.json"))
        if completed:
            break
        kill_at += 1
    # The walk covered the whole run: the buffer's and the state's writes, post and answer.
    assert kill_at > 12, child.stderr
