"""/proc reading: real files of this process, vanished processes, unreadable and bad files."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import threading
from typing import Optional

import pytest

from clusterwatch.jobs.exporter import JobsCollector
from clusterwatch.jobs.file_reader import ErrorCounts, FileReader, read_file
from clusterwatch.jobs.procfs import IoCounters, ProcReader
from tests.jobs.fake_tree import PAGE, Tree, v1_slurm_job


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


WRITER = ("import os, sys, time\n"
          "for _ in range(500): os.write(1, b'x')\n"
          "print(flush=True); time.sleep(60)\n")


def start_with_pid(pid: int) -> Optional[subprocess.Popen[bytes]]:
    """A process that gets `pid` (root: the kernel's next PID is set through ns_last_pid);
    None when other processes of the machine keep taking it."""
    for _ in range(50):
        try:
            with open("/proc/sys/kernel/ns_last_pid", "w") as last:
                last.write(str(pid - 1))
        except OSError:
            return None
        child = subprocess.Popen(["sleep", "60"])
        if child.pid == pid:
            return child
        child.kill()
        child.wait()
    return None


def test_it_tells_a_reused_pid_from_the_process_that_had_it(tree: Tree) -> None:
    """The held /proc files belong to the first process: after it exits and another takes
    its PID, the exporter reads the new one and counts it as a new process."""
    if os.geteuid() != 0:
        pytest.skip("needs root to choose the next PID")
    first = subprocess.Popen([sys.executable, "-c", WRITER], stdout=subprocess.PIPE)
    second = None
    try:
        assert first.stdout is not None
        first.stdout.readline()  # it wrote 500 times
        v1_slurm_job(tree, "42", tasks={"step_0/task_0": [first.pid]})
        collector = JobsCollector(tree.cgroup, "/proc", nvml=None)
        [sample] = collector.collect_samples()[0]
        assert sample.spawned == 1 and sample.io is not None
        written = sample.io.write_operations
        assert written >= 500
        first.kill()
        first.wait()
        second = start_with_pid(first.pid)
        if second is None:
            pytest.skip("the PID was taken by another process of this machine")
        [sample] = collector.collect_samples()[0]
        assert (sample.processes, sample.spawned) == (1, 2)
        assert sample.io is not None and sample.io.write_operations >= written
        assert collector.errors.snapshot()["process_vanished"] == 0
    finally:
        for process in (first, second):
            if process is not None and process.poll() is None:
                process.kill()
                process.wait()
