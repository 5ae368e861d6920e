"""The bounded local buffer records wait in: its bound, order, files and the loss counts it
keeps until a record reports them (the pass over it: test_delivery.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from clusterwatch.reporter import buffer as buffer_module
from clusterwatch.reporter.buffer import Buffer
from clusterwatch.reporter.delivery import deliver
from tests.support.tls import MonitorServer

from .delivery_support import T0, TOKEN, Clock, run_once, seqs


def test_it_keeps_only_the_newest_set_aside_records(
        buffer: Buffer, clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(buffer_module, "SET_ASIDE_KEEP", 2)
    names = [buffer.add({"seq": seq}) for seq in range(4)]
    outcome = deliver(buffer, "https://monitor.example.org/x", TOKEN,
                      poster=lambda data: (400, "http: HTTP 400 Bad Request"), now=clock)

    assert outcome["set_aside"] == 4
    assert outcome["section"]["set_aside"] == 4  # all counted, two kept for an operator
    kept = sorted(os.listdir(buffer.set_aside_dir))
    assert kept == sorted([names[2], names[3], names[2][:20] + ".reason.txt",
                           names[3][:20] + ".reason.txt"])


# -- the buffer ----------------------------------------------------------------------------


def test_it_drops_the_oldest_records_at_the_bound_and_reports_every_drop_once(
        tmp_path: Path, clock: Clock, caplog: pytest.LogCaptureFixture) -> None:
    buffer = Buffer(str(tmp_path / "state"), max_records=2, clock=clock)
    with MonitorServer(None) as server:  # down for six runs
        for seq in range(6):
            run = run_once(buffer, clock, seq, server.url, None)
            assert run["backlog"] == min(seq + 1, 2)
        assert "delivery buffer full (2 records or 52428800 bytes at most): dropped the 1 " \
               "oldest" in caplog.text
        pending = buffer.section()["dropped"]
        server.start()
        delivered = deliver(buffer, server.url, TOKEN, now=clock)

    assert delivered["delivered_all"] is True
    assert seqs(server) == [4, 5]  # the newest survive
    reported = [json.loads(post.body)["delivery"]["dropped"] for post in server.posts]
    # seq 0-3 were dropped. Records 4 and 5 each tell one drop; record 3 carried one when
    # it was dropped itself, so that one and record 3's own drop wait for the next record:
    # each drop is told exactly once.
    assert reported == [1, 1]
    assert pending == 2
    assert delivered["section"]["dropped"] == 2
    assert delivered["section"]["reasons"] == {"dropped: buffer full": 2}


def test_it_bounds_the_buffer_by_bytes_but_keeps_the_newest_record(
        tmp_path: Path, clock: Clock) -> None:
    buffer = Buffer(str(tmp_path / "state"), max_bytes=120, clock=clock)  # 57 B a record
    buffer.add({"pad": "x" * 40, "seq": 0})
    buffer.add({"pad": "x" * 40, "seq": 1})
    assert len(buffer.names()) == 2
    buffer.add({"pad": "x" * 40, "seq": 2})
    assert [json.loads(buffer.read(n))["seq"] for n in buffer.names()] == [1, 2]
    buffer.add({"pad": "x" * 500, "seq": 3})
    assert [json.loads(buffer.read(n))["seq"] for n in buffer.names()] == [3]
    assert buffer.section()["dropped"] == 3
    assert buffer.section()["reasons"] == {"dropped: buffer full": 3}


def test_it_keeps_the_order_when_the_clock_steps_back(tmp_path: Path, clock: Clock) -> None:
    buffer = Buffer(str(tmp_path / "state"), clock=clock)
    first = buffer.add({"seq": 0})
    clock.tick(-3600)
    second = buffer.add({"seq": 1})
    assert buffer.names() == [first, second]
    assert int(second[:20]) == int(first[:20]) + 1


def test_it_writes_records_privately(buffer: Buffer) -> None:
    name = buffer.add({"seq": 0})
    assert os.stat(buffer.dir).st_mode & 0o777 == 0o700
    assert os.stat(os.path.join(buffer.dir, name)).st_mode & 0o777 == 0o600


def test_it_leaves_no_half_record_when_a_write_fails(
        buffer: Buffer, monkeypatch: pytest.MonkeyPatch) -> None:
    def disk_full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(OSError, match="No space left"):
        buffer.add({"seq": 0})
    assert os.listdir(buffer.dir) == []


def test_it_ignores_and_later_cleans_what_a_run_killed_mid_write_left(
        tmp_path: Path, clock: Clock) -> None:
    state = tmp_path / "state"
    Buffer(str(state), clock=clock).add({"seq": 0})
    child = subprocess.run([sys.executable, "-c", textwrap.dedent(f"""
        import os, signal
        from clusterwatch.reporter.buffer import Buffer
        os.fsync = lambda fd: os.kill(os.getpid(), signal.SIGKILL)
        Buffer({str(state)!r}).add({{"seq": 1, "pad": "x" * 100000}})
        """)], check=False)
    assert child.returncode == -signal.SIGKILL

    leftovers = [n for n in os.listdir(state / "buffer") if n.startswith(".tmp-")]
    assert len(leftovers) == 1
    buffer = Buffer(str(state), clock=clock)
    assert [json.loads(buffer.read(n))["seq"] for n in buffer.names()] == [0]
    posted: list[int] = []
    deliver(buffer, "https://monitor.example.org/x", TOKEN, now=clock,
            poster=lambda data: (posted.append(json.loads(data)["seq"]), (200, "HTTP 200"))[1])
    assert posted == [0]
    assert (state / "buffer" / leftovers[0]).exists()  # young: maybe a live writer's

    clock.tick(buffer_module.STALE_TEMP_SECONDS + 1)
    os.utime(state / "buffer" / leftovers[0], (T0, T0))
    Buffer(str(state), clock=clock)
    assert os.listdir(state / "buffer") == []


def test_it_starts_the_counts_again_when_their_file_is_corrupt(
        buffer: Buffer, caplog: pytest.LogCaptureFixture) -> None:
    Path(buffer.state_dir, "delivery.json").write_text("{not json")
    assert buffer.section()["dropped"] == 0
    assert "delivery counts start again from zero" in caplog.text
    buffer.add({"seq": 0, "delivery": {"error": "section failed"}})
    assert buffer.section()["backlog"] == 1


def test_it_moves_a_set_aside_records_counts_back_for_the_next_record(
        buffer: Buffer, clock: Clock) -> None:
    buffer.add({"seq": 0})
    deliver(buffer, "https://monitor.example.org/x", TOKEN, now=clock,
            poster=lambda data: (400, "http: HTTP 400 Bad Request"))
    assert buffer.section()["set_aside"] == 1
    buffer.add({"seq": 1, "delivery": buffer.section()})
    assert buffer.counts()["set_aside"] == 0  # carried by record 1 now
    deliver(buffer, "https://monitor.example.org/x", TOKEN, now=clock,
            poster=lambda data: (413, "http: HTTP 413 Payload Too Large"))
    # record 1 never arrived, so its report comes back along with its own rejection
    assert buffer.section()["set_aside"] == 2
    assert buffer.section()["reasons"] == {"set aside: HTTP 400": 1, "set aside: HTTP 413": 1}

