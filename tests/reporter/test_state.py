"""A damaged state file is said loudly (stderr and the record's `state` field), kept aside for
an operator, and what still parses in it is used; the zipapp runs as cron runs it."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any, Callable

import pytest

from tests.support.harvester_host import Host
from tests.support.reporter_zipapp import run_app

from .main_support import FETCH_OK, newest_buffered

LINES = 2


def garbage(path: Path) -> None:
    path.write_bytes(b"\x00\xff{not json at all")


def empty(path: Path) -> None:
    path.write_bytes(b"")


def truncated(path: Path) -> None:
    """Cut right after the job fetcher's position (a disk that lost the file's tail)."""
    text = path.read_text()
    entry = text.index('"panda-job_fetcher.log": {')
    path.write_text(text[:text.index("}", entry) + 1] + ', "panda-propa')


def unreadable(path: Path) -> None:
    path.unlink()
    path.mkdir()  # reading it fails whoever runs the test (root reads mode-000 files)


def fifo(path: Path) -> None:
    """A named pipe in the file's place: opening it to read waits for a writer forever."""
    path.unlink()
    os.mkfifo(path)


def wrong_parts(path: Path) -> None:
    state = json.loads(path.read_text())
    state["logs"]["panda-submitter.log"] = 5
    state["adjustment"] = [1, 2]
    path.write_text(json.dumps(state))


def deleted(path: Path) -> None:
    path.unlink()


def attempts(record: dict[str, Any]) -> int:
    queue = record["fetching"].get("queues", {}).get("BNL_PanDA_1", {})
    found: int = queue.get("attempts", 0)
    return found


@pytest.mark.parametrize(("damage", "recovers_fetcher", "kept_aside"), [
    (garbage, False, True), (empty, False, True), (truncated, True, True),
    (unreadable, False, True), (fifo, False, True), (wrong_parts, True, True),
    (deleted, False, False),
])
def test_it_says_so_keeps_it_aside_and_recovers_what_parses(
    tmp_path: Path, zipapp: Path, damage: Callable[[Path], None],
    recovers_fetcher: bool, kept_aside: bool,
) -> None:
    host = Host(tmp_path)
    host.without_monitor()
    assert run_app(zipapp, *host.args()).returncode == 2  # first run: positions
    host.append("".join(FETCH_OK.format(t=f"2026-10-02 18:2{n}:44") for n in range(LINES)))
    state_file = host.state / "state.json"
    before = state_file.read_bytes()
    damage(state_file)
    damaged = state_file.read_bytes() if state_file.is_file() else None

    done = run_app(zipapp, *host.args())
    assert done.returncode == 2, done.stderr
    said = [line for line in done.stderr.splitlines() if "state file" in line]
    assert len(said) == 1 and "Traceback" not in done.stderr, done.stderr
    assert str(state_file) in said[0]
    record = newest_buffered(host)
    assert record["state"]["error"] in said[0]
    assert attempts(record) == (LINES if recovers_fetcher else 0)
    assert (record["fetching"]["read"].get("first_run") is True) is not recovers_fetcher
    kept = record["state"].get("kept_as")
    if kept_aside:
        assert kept and kept in said[0]
        copy = host.state / kept
        assert copy.exists() and (damaged is None or copy.read_bytes() == damaged)
    else:
        assert kept is None
    assert before  # the damage really changed something
    if recovers_fetcher:
        assert "logs/panda-job_fetcher.log" in record["state"]["recovered"]

    # The state is whole again: the next run is an ordinary one.
    host.append(FETCH_OK.format(t="2026-10-02 18:29:44"))
    again = run_app(zipapp, *host.args())
    assert again.returncode == 2 and "state file" not in again.stderr, again.stderr
    record = newest_buffered(host)
    assert "state" not in record and attempts(record) == 1


def test_it_keeps_at_most_a_few_damaged_copies(tmp_path: Path, zipapp: Path) -> None:
    host = Host(tmp_path)
    host.without_monitor()
    run_app(zipapp, *host.args())
    for n in range(8):
        (host.state / "state.json").write_bytes(b"garbage %d" % n)
        assert "damaged" in run_app(zipapp, *host.args()).stderr
    copies = sorted(p.name for p in host.state.glob("state.json.damaged-*"))
    assert 1 <= len(copies) <= 5
    assert (host.state / copies[-1]).read_bytes() == b"garbage 7"


def test_it_reports_but_does_not_move_anything_with_print(tmp_path: Path,
                                                          zipapp: Path) -> None:
    host = Host(tmp_path)
    host.without_monitor()
    run_app(zipapp, *host.args())
    garbage(host.state / "state.json")
    listing = sorted(p.name for p in host.state.iterdir())
    done = run_app(zipapp, *host.args("--print"))
    assert done.returncode == 0
    assert "damaged" in done.stderr
    assert json.loads(done.stdout)["state"]["kept_as"] is None
    assert sorted(p.name for p in host.state.iterdir()) == listing
    shutil.rmtree(host.state)
