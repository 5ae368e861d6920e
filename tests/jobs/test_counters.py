"""I/O totals never go backwards; processes are told apart by PID and start time."""

from __future__ import annotations

from clusterwatch.jobs.counters import JobCounters
from clusterwatch.jobs.procfs import IoCounters


def io(read: int, write: int = 0) -> IoCounters:
    return IoCounters(read, write, read // 10, write // 10)


def test_it_keeps_the_io_of_a_process_that_exited() -> None:
    counters = JobCounters()
    assert counters.update([((1, 100), io(500)), ((2, 100), io(300))]) == io(800)
    # Process 1 exits: its last reading stays in the total.
    assert counters.update([((2, 100), io(400))]) == io(900)
    assert counters.update([]) == io(900)
    assert counters.spawned == 2


def test_it_treats_a_reused_pid_as_a_new_process() -> None:
    counters = JobCounters()
    counters.update([((1, 100), io(500))])
    assert counters.update([((1, 200), io(50))]) == io(550)
    assert counters.spawned == 2


def test_it_never_decreases_when_a_reading_goes_down() -> None:
    counters = JobCounters()
    counters.update([((1, 100), io(500, 70))])
    assert counters.update([((1, 100), io(20, 90))]) == io(500, 90)


def test_it_keeps_the_last_reading_of_a_process_that_became_unreadable() -> None:
    counters = JobCounters()
    counters.update([((1, 100), io(500))])
    assert counters.update([((1, 100), None)]) == io(500)
    assert counters.update([]) == io(500)
    assert counters.io_known


def test_it_marks_io_unknown_when_no_process_was_ever_readable() -> None:
    counters = JobCounters()
    assert counters.io_known  # no process yet: zero is the truth
    counters.update([((1, 100), None)])
    assert not counters.io_known
    counters.update([])
    assert not counters.io_known
