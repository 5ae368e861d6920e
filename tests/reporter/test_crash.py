"""A reporter run killed with SIGKILL at any point counts every log line exactly once.

The zipapp runs unmodified in a child process whose audit hook (PEP 578) kills it at the Nth
step that changes something outside the process: a file opened for writing (temp files, the
lock), a rename, a link or a removal, and each send of an HTTP request. The test walks N from 1
until a run completes, so every such point between collecting the record and saving the log
positions, and in delivery, is hit once (a kill just before a rename is also one just after
the write it commits; SIGKILL loses no written page, so fsync adds no point of its own).
After each kill, ordinary runs carry on, and what the monitor received is added up. The
monitor stores a record identical to one it has (a retry) once, so identical posts count
once here too.
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
from tests.support.harvester_host import Host
from tests.support.tls import MonitorServer

from .main_support import FETCH_OK

LINES = 3

CHILD = textwrap.dedent(
    """
    import os, runpy, signal, sys
    kill_at, app = int(sys.argv[1]), sys.argv[2]
    STEPS = {"os.rename", "os.remove", "os.link", "http.client.send"}
    WRITING = os.O_WRONLY | os.O_RDWR
    seen = [0]

    def at_step(event, args):
        if event in STEPS or (event == "open" and isinstance(args[2], int)
                              and args[2] & WRITING):
            seen[0] += 1
            if seen[0] == kill_at:
                sys.stderr.write("killed at step %d: %s %r\\n" % (kill_at, event, args[:1]))
                sys.stderr.flush()
                os.kill(os.getpid(), signal.SIGKILL)

    sys.addaudithook(at_step)
    sys.argv = [app] + sys.argv[3:]
    try:
        runpy.run_path(app, run_name="__main__")
    finally:
        sys.stderr.write("completed after %d steps\\n" % seen[0])
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
        if len(post.body) < int(post.headers.get("Content-Length", "0")):
            continue  # killed while sending: the monitor refuses a body cut short
        record = json.loads(post.body)
        kept.setdefault(json.dumps(record, sort_keys=True), record)
    return list(kept.values())


def attempts(records: list[dict[str, Any]]) -> int:
    return sum(record["fetching"].get("queues", {}).get("BNL_PanDA_1", {}).get("attempts", 0)
               for record in records)


def test_it_counts_every_line_once_when_killed_at_any_point(tmp_path: Path,
                                                            zipapp: Path) -> None:
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
            child = run_killed_at(zipapp, host, kill_at)
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
