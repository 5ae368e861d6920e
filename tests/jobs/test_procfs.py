"""/proc reading: real files of this process, vanished processes, unreadable and bad files."""

from __future__ import annotations

import errno
import os
import threading

from clusterwatch.jobs.file_reader import ErrorCounts, FileReader, read_file
from clusterwatch.jobs.procfs import IoCounters, ProcReader
from tests.jobs.fake_tree import PAGE, Tree


def reader(tree_proc: str, opener=read_file) -> tuple[ProcReader, ErrorCounts]:  # type: ignore[no-untyped-def]
    errors = ErrorCounts()
    return ProcReader(tree_proc, FileReader(errors, opener)), errors


def test_it_reads_this_process_from_the_real_proc() -> None:
    procs, errors = reader("/proc")
    threading.Thread(target=threading.Event().wait, args=(0.5,), daemon=True).start()
    sample = procs.sample(os.getpid())
    assert sample is not None
    assert sample.pid == os.getpid()
    assert sample.threads >= 2
    assert sample.rss_bytes > 0 and sample.rss_bytes % PAGE == 0
    assert sample.starttime > 0
    assert sample.io is not None and sample.io.read_operations > 0
    assert sample.open_files is not None and sample.open_files >= 3
    assert procs.real_uid(os.getpid()) == os.getuid()
    environ = procs.environ(os.getpid(), (b"PATH=", b"HOME="))
    assert environ is not None and environ.get("PATH") == os.environ.get("PATH")
    assert set(environ) <= {"PATH", "HOME"}
    assert errors.snapshot()["process_vanished"] == 0


def test_it_parses_a_command_name_with_spaces_and_parentheses(tree: Tree) -> None:
    tree.process(300, comm="evil) 1 2 3 (name", threads=7, starttime=999, rss_pages=3)
    procs, _ = reader(str(tree.proc))
    sample = procs.sample(300)
    assert sample is not None
    assert (sample.threads, sample.starttime, sample.rss_bytes) == (7, 999, 3 * PAGE)


def test_it_counts_a_pid_listed_without_a_proc_directory_as_vanished(tree: Tree) -> None:
    procs, errors = reader(str(tree.proc))
    assert procs.sample(12345) is None
    assert errors.snapshot()["process_vanished"] == 1


def test_it_counts_a_process_exiting_while_its_files_are_read_once(tree: Tree) -> None:
    tree.process(301)

    def opener(path: str) -> bytes:
        if path.endswith("/io"):
            raise ProcessLookupError(errno.ESRCH, "No such process")
        return read_file(path)

    procs, errors = reader(str(tree.proc), opener)
    assert procs.sample(301) is None
    assert errors.snapshot()["process_vanished"] == 1


def test_it_keeps_a_process_whose_io_is_denied_and_counts_the_denial(tree: Tree) -> None:
    tree.process(302, threads=3)

    def opener(path: str) -> bytes:
        if path.endswith("/io"):
            raise PermissionError(errno.EACCES, "Permission denied")
        return read_file(path)

    procs, errors = reader(str(tree.proc), opener)
    sample = procs.sample(302)
    assert sample is not None and sample.threads == 3 and sample.io is None
    assert errors.snapshot()["permission_denied"] == 1


def test_it_counts_malformed_stat_and_io(tree: Tree) -> None:
    tree.process(303)
    (tree.proc / "303/stat").write_text("303 (short) S 1 2\n")
    tree.process(304)
    (tree.proc / "304/io").write_text("rchar: lots\n")
    procs, errors = reader(str(tree.proc))
    assert procs.sample(303) is None
    sample = procs.sample(304)
    assert sample is not None and sample.io is None
    assert errors.snapshot()["malformed"] == 2


def test_it_adds_and_floors_io_counters_field_by_field() -> None:
    a, b = IoCounters(1, 2, 3, 4), IoCounters(10, 0, 30, 0)
    assert a.plus(b) == IoCounters(11, 2, 33, 4)
    assert a.at_least(b) == IoCounters(10, 2, 30, 4)
