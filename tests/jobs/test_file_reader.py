"""Held files: re-read fresh with pread, tied to the process or cgroup they were opened on,
closed when a collection does not read them, bounded by a budget of descriptors."""

from __future__ import annotations

import errno
import os
import resource
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from clusterwatch.jobs.file_reader import (
    ErrorCounts,
    FileReader,
    HeldFiles,
    ProcessVanished,
    raise_open_files_limit,
)


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_it_reads_the_kernels_current_text_at_every_read(tmp_path: Path) -> None:
    held = HeldFiles(10)
    before = held.read("/proc/self/io")
    (tmp_path / "x").write_bytes(b"y" * 100_000)  # syscalls this process makes
    (tmp_path / "x").read_bytes()
    after = held.read("/proc/self/io")
    assert len(held) == 1
    syscalls = [int(line.split()[1]) for text in (before, after)
                for line in text.splitlines() if line.startswith(b"syscw:")]
    assert syscalls[1] > syscalls[0]


def test_it_reads_a_file_longer_than_one_chunk_whole(tmp_path: Path) -> None:
    big = tmp_path / "big"
    big.write_bytes(os.urandom(200_000))
    held = HeldFiles(10)
    assert held.read(str(big)) == big.read_bytes()
    big.write_bytes(b"short")  # rewritten in place: the held file sees it
    assert held.read(str(big)) == b"short"


def test_it_closes_what_a_collection_did_not_read(tmp_path: Path) -> None:
    paths = []
    for name in "abc":
        (tmp_path / name).write_text(name)
        paths.append(str(tmp_path / name))
    held = HeldFiles(10)
    start = open_fds()
    for path in paths:
        held.read(path)
    held.sweep()
    assert open_fds() == start + 3
    held.read(paths[0])  # the next collection reads only one of them
    held.sweep()
    assert (len(held), open_fds()) == (1, start + 1)
    held.close()
    assert open_fds() == start


def test_it_reads_beyond_its_budget_without_holding(tmp_path: Path) -> None:
    held = HeldFiles(2)
    for name in "abcd":
        (tmp_path / name).write_text(name)
    assert [held.read(str(tmp_path / name)) for name in "abcd"] == [b"a", b"b", b"c", b"d"]
    assert len(held) == 2
    assert HeldFiles(0).read(str(tmp_path / "a")) == b"a"


def test_it_holds_fewer_files_when_the_process_runs_out_of_descriptors(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    held = HeldFiles(100)
    for name in "abcd":
        (tmp_path / name).write_text(name)
        held.read(str(tmp_path / name))
    real_open = os.open
    failures = [OSError(errno.EMFILE, "Too many open files")]

    def failing_open(path: str, flags: int, *args: object, **kwargs: object) -> int:
        if failures:
            raise failures.pop()
        return real_open(path, flags, *args, **kwargs)  # type: ignore[arg-type]

    (tmp_path / "e").write_text("e")
    monkeypatch.setattr(os, "open", failing_open)
    assert held.read(str(tmp_path / "e")) == b"e"  # read plainly all the same
    assert held.max_open == 2 and len(held) == 2


def test_it_reopens_the_path_when_the_process_it_was_opened_on_is_gone() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    path = f"/proc/{child.pid}/stat"
    held = HeldFiles(10)
    try:
        assert held.read(path).startswith(f"{child.pid} (".encode())
        assert held.stat(f"/proc/{child.pid}/fd").st_size >= 0
        serial = held.serial(path)
        assert serial is not None and held.read(path) and held.serial(path) == serial
    finally:
        child.kill()
        child.wait()
    # The held file says ESRCH; the path is opened again and the process is not there.
    with pytest.raises(FileNotFoundError):
        held.read(path)
    with pytest.raises(FileNotFoundError):
        held.stat(f"/proc/{child.pid}/fd")
    errors = ErrorCounts()
    reader = FileReader(errors, held=held)
    with pytest.raises(ProcessVanished):
        reader.proc_bytes(path)
    assert len(held) == 0


def test_it_raises_the_soft_open_files_limit_to_the_hard_one() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 64:
        pytest.skip("hard open-files limit too low to test")
    code = ("import resource\n"
            "from clusterwatch.jobs.file_reader import raise_open_files_limit\n"
            "print(raise_open_files_limit(), resource.getrlimit(resource.RLIMIT_NOFILE)[1])\n")
    lowered = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (32, hard)))
    raised, limit = lowered.stdout.split()
    assert raised == limit or limit == str(resource.RLIM_INFINITY)
    assert raise_open_files_limit() >= soft


def test_it_counts_threads_and_open_files_through_held_directories() -> None:
    held = HeldFiles(10)
    task = f"/proc/{os.getpid()}/task"
    threads = held.stat(task).st_nlink - 2
    assert threads == len(os.listdir(task))
    stop = threading.Event()
    worker = threading.Thread(target=stop.wait)
    worker.start()
    try:
        assert held.stat(task).st_nlink - 2 == threads + 1  # the same held directory
    finally:
        stop.set()
        worker.join()
    assert held.serial(task) is not None
    held.release(task)
    assert held.serial(task) is None and len(held) == 0


def test_it_gives_every_opening_a_new_serial(tmp_path: Path) -> None:
    (tmp_path / "a").write_text("a")
    held = HeldFiles(10)
    held.read(str(tmp_path / "a"))
    first = held.serial(str(tmp_path / "a"))
    held.release(str(tmp_path / "a"))
    held.read(str(tmp_path / "a"))
    assert held.serial(str(tmp_path / "a")) not in (None, first)
