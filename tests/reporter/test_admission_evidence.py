"""Slot identity and busy/execution seconds from condor event logs of every vintage."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from clusterwatch.reporter import admission_evidence as ae
from clusterwatch.reporter.admission_evidence import event_log_evidence, worker_evidence
from tests.support.admission_section import FILES, LIFETIME, STARTUP


def _expected(slot: Any, busy: Any, execute: Any, universe: str, missing: dict[str, str],
              return_value: Any = 73, signal: Any = None) -> dict[str, Any]:
    return {"slot_name": slot, "slot_busy_s": busy, "execute_s": execute,
            "return_value": return_value, "signal": signal, "universe": universe,
            "missing": missing}


@pytest.mark.parametrize(("name", "expected"), [
    ("v23_refusal.log", _expected("slot1_3@wn01.example.edu", 120, 95, "vanilla", {})),
    ("v10_5_refusal.log", _expected("slot1_4@wn02.example.edu", None, None, "vanilla",
                                    {"slot_busy_s": ae.NO_TIMES_OLD,
                                     "execute_s": ae.NO_TIMES_OLD})),
    ("v10_0_refusal.log", _expected(None, None, None, "vanilla",
                                    {"slot_name": ae.NO_SLOT_OLD,
                                     "slot_busy_s": ae.NO_TIMES_OLD,
                                     "execute_s": ae.NO_TIMES_OLD})),
    ("grid_refusal.log", _expected(None, None, None, "grid",
                                   {"slot_name": ae.NO_SLOT_GRID,
                                    "slot_busy_s": ae.NO_TIMES_GRID,
                                    "execute_s": ae.NO_TIMES_GRID})),
    ("v23_sigterm.log", _expected("slot1_9@wn03.example.edu", 120, 95, "vanilla", {},
                                  return_value=None, signal=15)),
])
def test_it_reads_slot_and_times_or_says_why_they_are_not_available(
        name: str, expected: dict[str, Any]) -> None:
    assert event_log_evidence(str(FILES / name)) == expected


def test_it_never_reports_a_missing_time_as_zero() -> None:
    for name in ("v10_0_refusal.log", "v10_5_refusal.log", "grid_refusal.log"):
        found = event_log_evidence(str(FILES / name))
        assert found["slot_busy_s"] is None and found["execute_s"] is None


def test_it_leaves_out_a_terminated_event_still_being_written(tmp_path: Path) -> None:
    text = (FILES / "v23_refusal.log").read_text()
    cut = tmp_path / "cut.log"
    cut.write_text(text[:text.index("TimeSlotBusy")])

    found = event_log_evidence(str(cut))

    assert found["slot_name"] == "slot1_3@wn01.example.edu"
    assert found["return_value"] is None
    assert found["missing"] == {"slot_busy_s": ae.NO_TERMINATED, "execute_s": ae.NO_TERMINATED}


def test_it_reads_a_log_with_nul_bytes_and_garbage(tmp_path: Path) -> None:
    path = tmp_path / "nul.log"
    path.write_bytes(b"\x00\x00garbage\n" + (FILES / "v23_refusal.log").read_bytes()
                     .replace(b"Cpus = 1", b"Cpus = \x00\xff"))

    assert event_log_evidence(str(path))["slot_busy_s"] == 120


def test_it_says_no_execute_event_for_a_worker_that_never_ran(tmp_path: Path) -> None:
    path = tmp_path / "never.log"
    path.write_text((FILES / "v23_refusal.log").read_text().split("001 (")[0])

    found = event_log_evidence(str(path))

    assert found["universe"] is None
    assert found["missing"]["slot_name"] == ae.NO_EXECUTE


def test_it_combines_both_files_and_marks_an_unreadable_one_incomplete(tmp_path: Path) -> None:
    both = worker_evidence(str(FILES / "v23_refusal.log"), str(FILES / "stderr_refusal.err"),
                           STARTUP, LIFETIME)
    one = worker_evidence(str(FILES / "v23_refusal.log"), str(tmp_path / "gone.err"),
                          STARTUP, LIFETIME)

    assert both["complete"] is True and both["errors"] == [] and both["missing"] == {}
    assert (both["slot_name"], both["required_lifetime_s"], both["remaining_lifetime_s"],
            both["execution_queue"]) == ("slot1_3@wn01.example.edu", 7200, 3400, "BNL_OSG_1")
    assert one["complete"] is False and one["slot_busy_s"] == 120
    assert one["errors"] == ["cannot read the launcher's stderr: FileNotFoundError: "
                             "No such file or directory"]


def test_it_reads_neither_a_fifo_nor_a_path_with_a_nul_and_says_why(tmp_path: Path) -> None:
    # A FIFO put in a worker's log place must not hang the run that holds the state lock (an
    # open waits for a writer); a NUL in a workAttributes path (JSON allows one) is this
    # worker's error, not one that fails the whole section on every run of the hour.
    import os
    import signal

    fifo = tmp_path / "worker.log"
    os.mkfifo(fifo)

    class Hung(Exception):
        """Not an OSError, so no reader's error handling takes it for a failed read."""

    def hung(_signum: int, _frame: Any) -> None:
        raise Hung("the read blocked on a FIFO")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(5)
    try:
        found = worker_evidence(str(fifo), str(fifo), STARTUP, LIFETIME)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert found["errors"] == [
        "cannot read the condor event log: NotRegularFile: not a regular file",
        "cannot read the launcher's stderr: NotRegularFile: not a regular file"]
    assert found["slot_name"] is None and found["remaining_lifetime_s"] is None
    nul = worker_evidence(str(tmp_path / "a\0b"), str(tmp_path / "c\0d"), STARTUP, LIFETIME)
    assert nul["complete"] is False and nul["errors"] == [
        "cannot read the condor event log: ValueError: embedded null byte",
        "cannot read the launcher's stderr: ValueError: embedded null byte"]
