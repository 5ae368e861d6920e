"""State files in bad shape, met by the installed program.

A bad value in one target's record is that target's problem; a state file that is not a
regular file does not hang the poll; an unusable lock file is one line, not a traceback; a
damaged state file is moved aside loudly, and what it still holds (open incidents, queued
messages) is kept and delivered.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from clusterwatch.loopback.http_recorder import SlackResponses

from .program import Run, run_watch
from .support import Pool

W1, W2 = "worker1.example.org", "worker2.example.org"
G1, G2 = "192.0.2.10:9100", "192.0.2.11:9100"


def stale(pool: Pool, *gpus: str) -> None:
    """Both nodes present; the given GPU files 2000 s old (an alert at once), others fresh."""
    now = time.time()
    pool.set_machines([W1, W2])
    pool.set_gpu_mtimes({g: now - (2000 if g in gpus else 20) for g in (G1, G2)}, now)


def status(pool: Pool) -> dict[str, Any]:
    done = run_watch(pool, "status", "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def incidents(pool: Pool) -> dict[str, str]:
    return {item["target"]: item["incident"] for item in status(pool)["open_incidents"]}


def state_file(pool: Pool) -> Path:
    return pool.state_dir / "state.json"


def assert_one_clean_line(done: Run, code: int) -> None:
    assert done.returncode == code, done.stderr
    assert "Traceback" not in done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr


# --- one target's record ----------------------------------------------------------------------

@pytest.mark.parametrize(("index", "value"), [(0, "yesterday"), (1, [1]), (5, "noon"),
                                              (4, None), (0, 1e400)],
                         ids=["last poll", "absent since", "incident opened", "incident id",
                              "infinite time"])
def test_it_resets_only_the_record_that_holds_a_bad_value(pool: Pool, index: int,
                                                          value: object) -> None:
    stale(pool, G1, G2)
    assert run_watch(pool).returncode == 0
    opened = incidents(pool)
    data = json.loads(state_file(pool).read_text())
    data["targets"][f"gpu:{G1}"][index] = value
    state_file(pool).write_text(json.dumps(data))

    damaged = run_watch(pool)
    assert damaged.returncode == 1 and "Traceback" not in damaged.stderr
    assert f"gpu:{G1}" in damaged.stderr
    after = run_watch(pool)
    assert after.returncode == 0 and "Traceback" not in after.stderr, after.stderr
    kept = incidents(pool)
    assert kept[f"gpu:{G2}"] == opened[f"gpu:{G2}"]  # the other targets are untouched
    if index < 4:  # the pending windows were bad, the incident was not
        assert kept[f"gpu:{G1}"] == opened[f"gpu:{G1}"]


# --- not a regular file, unusable lock --------------------------------------------------------

def test_it_moves_aside_a_state_file_that_is_a_fifo_instead_of_hanging(pool: Pool) -> None:
    pool.state_dir.mkdir(mode=0o700)
    os.mkfifo(state_file(pool), 0o600)
    stale(pool, G1)

    shown = run_watch(pool, "status", limit=20)
    assert_one_clean_line(shown, 1)
    assert "not a regular file" in shown.stderr

    done = run_watch(pool, limit=20)
    assert done.returncode == 1 and "not a regular file" in done.stderr
    assert f"ALERT gpu:{G1} (stale)" in done.stdout
    [aside] = pool.state_dir.glob("state.json.corrupt-*")
    assert aside.is_fifo() and state_file(pool).is_file()
    assert run_watch(pool, limit=20).returncode == 0


@pytest.mark.parametrize("make", [
    lambda lock: lock.mkdir(),
    lambda lock: lock.symlink_to(lock.name),  # a loop
], ids=["directory", "symlink loop"])
def test_it_reports_an_unusable_lock_file_on_one_line(pool: Pool,
                                                      make: Callable[[Path], None]) -> None:
    pool.state_dir.mkdir(mode=0o700)
    make(pool.state_dir / "lock")
    stale(pool)
    for verb in ((), ("redeliver",)):
        done = run_watch(pool, *verb)
        assert_one_clean_line(done, 1)
        assert "lock" in done.stderr and done.stdout == ""


# --- a damaged state file ---------------------------------------------------------------------

def replace_once(old: bytes, new: bytes) -> Callable[[bytes], bytes]:
    def damage(data: bytes) -> bytes:
        assert data.count(old) >= 1, old
        return data.replace(old, new, 1)
    return damage


def cut_inside(key: bytes) -> Callable[[bytes], bytes]:
    def damage(data: bytes) -> bytes:
        return data[:data.index(key) + len(key) + 3]
    return damage


DAMAGE: dict[str, Callable[[bytes], bytes]] = {
    "garbage in last_poll": replace_once(b'"last_poll":{', b'"last_poll":{]]'),
    "truncated in the history": cut_inside(b'"history":'),
    "a torn row before the incident's": replace_once(f'"node:{W1}":['.encode(),
                                                     f'"node:{W1}":[[['.encode()),
    "bytes that are not UTF-8": replace_once(b'"last_poll":', b'"last_poll":\xff\xfe'),
    "a zero-filled tail": lambda data: data + b"\0" * 4096,
    "a torn event": replace_once(b'"action":"alert"', b'"action":"al'),
}


@pytest.mark.parametrize("damage", list(DAMAGE.values()), ids=list(DAMAGE))
def test_it_keeps_incidents_and_queued_messages_of_a_damaged_state_file(
    pool: Pool, damage: Callable[[bytes], bytes]
) -> None:
    stale(pool, G1)
    pool.set_machines([W2])  # W1's pending absence window: a row before the incident's
    pool.slack.enqueue(SlackResponses.server_error())
    first = run_watch(pool)
    assert first.returncode == 0 and f"ALERT gpu:{G1} (stale)" in first.stdout
    opened = incidents(pool)
    corrupt = damage(state_file(pool).read_bytes())
    state_file(pool).write_bytes(corrupt)

    before = run_watch(pool, "status")
    assert_one_clean_line(before, 1)
    assert "the next poll moves it aside" in before.stderr
    assert state_file(pool).read_bytes() == corrupt  # status changes nothing

    done = run_watch(pool)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "moved it to" in done.stderr and "kept 1 open incident" in done.stderr
    [aside] = pool.state_dir.glob("state.json.corrupt-*")
    assert aside.read_bytes() == corrupt
    delivered = [request.json()["text"] for request in pool.slack.requests[1:]]
    assert any(f"ALERT gpu:{G1} (stale) incident {opened[f'gpu:{G1}']}" in text
               for text in delivered), delivered

    summary = status(pool)
    assert incidents(pool) == opened
    assert summary["last_poll"]["state_damage"]["copy"] == str(aside)
    text = run_watch(pool, "status").stdout
    assert "state file damaged" in text and str(aside) in text
    health = (pool.state_dir / "clusterwatch_watch.prom").read_text()
    [damage_line] = [line for line in health.splitlines()
                     if line.startswith("clusterwatch_watch_state_damage_timestamp_seconds ")]
    assert float(damage_line.split()[1]) > 0
    assert run_watch(pool).returncode == 0  # the next poll is a normal one
