"""The admission section: classes kept apart, refusals grouped by slot and admission floor,
coverage, the per-run cap of startup records and the cache over several runs."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Optional

import pytest

from clusterwatch.reporter import admission_evidence as ae
from clusterwatch.reporter.admission import classify
from clusterwatch.reporter.admission_collect import AdmissionSettings, build_section
from tests.support.admission_section import FILES

BASE = "https://harvester.example.org/condor_logs"
QUEUE = "BNL_OSG_1"
START, END = "2026-10-22T13:10:00Z", "2026-10-22T13:14:00Z"  # 240 s recorded wall time


def _worker(wid: int, status: str, code: Optional[int], log: Optional[str] = None,
            err: Optional[str] = None, site: str = QUEUE, start: Optional[str] = START
            ) -> dict[str, Any]:
    return {"workerID": wid, "computingSite": site, "status": status, "nativeExitCode": code,
            "startTime": start, "endTime": END,
            "batchLog": f"{BASE}/26-10-22_13/{log}" if log else None,
            "stdErr": f"{BASE}/26-10-22_13/{err}" if err else None}


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, Any]:
    logs = tmp_path / "condor_logs"
    shutil.copytree(FILES, logs / "26-10-22_13")
    return {QUEUE: {"logBaseURL": BASE, "logDir": str(logs)},
            "OTHER": {"logBaseURL": BASE, "logDir": str(logs)}}


WORKERS = [
    _worker(8, "failed", None, "v10_0_refusal.log"),  # the exit code only in the event log
    _worker(7, "failed", None),                     # no log, no code: unclassified
    _worker(6, "finished", 0, "v23_ok.log"),
    _worker(5, "failed", 64, "v23_error.log"),
    _worker(4, "cancelled", None, "v23_sigterm.log"),
    _worker(3, "failed", 73, "grid_refusal.log", "stderr_no_lifetime.err", start=None),
    _worker(2, "failed", 73, "v23_refusal.log", "stderr_refusal.err"),
    _worker(1, "failed", 73, "v23_refusal.log", "stderr_refusal.err"),
    _worker(9, "finished", 0, site="OTHER"),
]


def _times(wall: int, wall_n: int, busy: int, busy_n: int, exe: int, exe_n: int
           ) -> dict[str, int]:
    return {"recorded_wall_s": wall, "recorded_wall_workers": wall_n, "slot_busy_s": busy,
            "slot_busy_workers": busy_n, "execute_s": exe, "execute_workers": exe_n}


def test_it_keeps_refusals_cancellations_and_errors_apart_with_exact_figures(
        tree: dict[str, Any]) -> None:
    section, _ = build_section(WORKERS, tree, {}, AdmissionSettings())

    queue = section["queues"][QUEUE]
    assert {name: queue[name]["count"] for name in
            ("refusal", "cancelled", "error", "finished", "unclassified")} == {
        "refusal": 4, "cancelled": 1, "error": 1, "finished": 1, "unclassified": 1}
    assert queue["ended"] == 8
    assert queue["refusal"]["exit_codes"] == {"73": 4}
    assert queue["cancelled"]["exit_codes"] == {"signal 15": 1}
    assert queue["error"]["exit_codes"] == {"64": 1}
    assert queue["unclassified"]["exit_codes"] == {"unknown": 1}
    # Wall time from work_table for 3 of 4 (one never started); slot times only where measured.
    assert queue["refusal"]["times"] == _times(720, 3, 240, 2, 190, 2)
    assert queue["cancelled"]["times"] == _times(240, 1, 120, 1, 95, 1)
    assert section["queues"]["OTHER"]["finished"]["count"] == 1
    assert (section["workers"], section["refusal_exit_codes"], section["window_s"]) == (
        9, [73], 3600)


def test_it_groups_repeated_refusals_by_slot_and_admission_floor(tree: dict[str, Any]) -> None:
    section, _ = build_section(WORKERS, tree, {}, AdmissionSettings())

    groups = section["queues"][QUEUE]["refusal"]["groups"]
    assert [(g["slot_name"], g["required_lifetime_s"], g["count"], g["repeated"])
            for g in groups] == [(None, None, 2, True),
                                 ("slot1_3@wn01.example.edu", 7200, 2, True)]
    assert groups[1]["remaining_lifetime_s_min"] == groups[1]["remaining_lifetime_s_max"] == 3400
    assert groups[1]["examples"][0] == {"worker": 2, "execution_host": "wn01.example.edu",
                                        "execution_queue": QUEUE, "remaining_lifetime_s": 3400}


def test_it_reports_coverage_and_what_is_not_available_and_why(tree: dict[str, Any]) -> None:
    section, _ = build_section(WORKERS, tree, {}, AdmissionSettings())

    coverage = section["queues"][QUEUE]["coverage"]
    assert (coverage["with_evidence"], coverage["without_evidence"]) == (7, 1)
    assert coverage["missing_reasons"] == {
        "no local path for the worker's batchLog URL; no local path for the worker's stdErr "
        "URL": 1}
    assert coverage["not_available"]["slot_name"] == {
        ae.NO_SLOT_GRID: 1, ae.NO_SLOT_OLD: 1, "no local path for the worker's batchLog URL": 1}
    assert coverage["not_available"]["slot_busy_s"] == {
        ae.NO_TIMES_GRID: 1, ae.NO_TIMES_OLD: 1, "no local path for the worker's batchLog URL": 1}
    assert section["queues"]["OTHER"]["coverage"]["without_evidence"] == 1


def test_it_never_names_73_by_the_pilots_generic_meaning(tree: dict[str, Any]) -> None:
    section, _ = build_section(WORKERS, tree, {}, AdmissionSettings())

    assert "oftware directory" not in repr(section)


def test_it_takes_a_sites_refusal_codes() -> None:
    worker = {"status": "failed", "nativeExitCode": 65}

    assert classify(worker, {}, (65, 73)) == "refusal"
    assert classify(worker, {}, (73,)) == "error"
    assert classify({"status": "failed", "nativeExitCode": 73}, {"signal": 15}, (73,)) == \
        "cancelled"
    assert classify({"status": "finished", "nativeExitCode": None}, {}, (73,)) == "finished"
    assert classify({"status": "missed", "nativeExitCode": None}, {}, (73,)) == "unclassified"


def test_it_reads_at_most_the_cap_per_run_then_the_rest_from_the_cache(
        tree: dict[str, Any]) -> None:
    settings = AdmissionSettings(max_records=3)
    logged = [w for w in WORKERS if w["batchLog"]]  # 7 workers with files

    first, cache = build_section(logged, tree, {}, settings)
    second, cache = build_section(logged, tree, cache, settings)
    third, cache = build_section(logged, tree, cache, settings)
    fourth, cache = build_section(logged, tree, cache, settings)

    assert [s["read"]["records_read"] for s in (first, second, third, fourth)] == [3, 3, 1, 0]
    assert [s["read"]["deferred"] for s in (first, second, third, fourth)] == [4, 1, 0, 0]
    assert fourth["read"]["from_cache"] == 7
    assert first["queues"][QUEUE]["coverage"]["missing_reasons"] == {
        "not read yet: the per-run cap of 3 startup records": 4}
    # The newest (first in the list, as the query orders them) are read first.
    assert sorted(cache) == sorted(str(w["workerID"]) for w in logged)
    assert fourth["queues"][QUEUE]["refusal"]["count"] == 4


def test_it_forgets_workers_that_left_the_hour_and_rereads_incomplete_ones(
        tree: dict[str, Any], tmp_path: Path) -> None:
    late = _worker(20, "failed", 73, "v23_refusal.log", "late.err")
    _, cache = build_section([late, WORKERS[-2]], tree, {}, AdmissionSettings())
    assert cache["20"]["complete"] is False
    (tmp_path / "condor_logs" / "26-10-22_13" / "late.err").write_text(
        "[launcher] lifetime: remaining=10s required=20s\n")

    section, cache = build_section([late], tree, cache, AdmissionSettings())

    assert sorted(cache) == ["20"]  # worker 2 left the hour
    assert cache["20"]["complete"] is True
    assert section["read"] == {"records_read": 1, "from_cache": 0, "deferred": 0, "cap": 4000}
    assert section["queues"][QUEUE]["refusal"]["groups"][0]["required_lifetime_s"] == 20


def test_it_reads_4000_startup_records_per_run_by_default(tree: dict[str, Any]) -> None:
    many = [_worker(100000 - n, "failed", 73, "v23_refusal.log", "stderr_refusal.err")
            for n in range(4005)]

    first, cache = build_section(many, tree, {}, AdmissionSettings())
    second, _ = build_section(many, tree, cache, AdmissionSettings())

    assert (first["read"]["records_read"], first["read"]["deferred"]) == (4000, 5)
    assert first["queues"][QUEUE]["coverage"]["with_evidence"] == 4000
    assert (second["read"]["records_read"], second["read"]["from_cache"]) == (5, 4000)
    assert second["queues"][QUEUE]["refusal"]["groups"][0]["count"] == 4005


def test_it_survives_a_damaged_cache(tree: dict[str, Any]) -> None:
    damaged_caches: list[Any] = [None, [], {"1": "x", "2": {"evidence": 5}}]
    for damaged in damaged_caches:
        section, cache = build_section(WORKERS[-2:], tree, damaged, AdmissionSettings())
        assert section["read"]["records_read"] == 1
        assert set(cache) == {"1", "9"}


def test_it_leaves_a_wall_time_out_when_the_clocks_say_it_ended_before_it_started(
        tree: dict[str, Any]) -> None:
    stepped_back = dict(_worker(30, "failed", 73, "v23_refusal.log"),
                        startTime="2026-10-22T13:20:00Z")  # after its endTime
    garbled = dict(_worker(31, "failed", 73, "v23_refusal.log"), startTime="13:10")

    section, _ = build_section([stepped_back, garbled], tree, {}, AdmissionSettings())

    times = section["queues"][QUEUE]["refusal"]["times"]
    assert (times["recorded_wall_s"], times["recorded_wall_workers"]) == (0, 0)
    assert (times["slot_busy_s"], times["slot_busy_workers"]) == (240, 2)


@pytest.mark.parametrize("damage", [{"missing": "x"}, {"missing": [1]}, {"errors": 5},
                                    {"errors": {"a": 1}}])
def test_it_rereads_a_cached_evidence_whose_parts_have_the_wrong_shape(
        tree: dict[str, Any], damage: dict[str, Any]) -> None:
    # A state.json edited or damaged in place: the section must not fail on it for the hour
    # the worker stays in the window (a failed section keeps the old cache).
    _, cache = build_section(WORKERS[-2:], tree, {}, AdmissionSettings())
    for entry in cache.values():
        entry["evidence"].update(damage)

    section, repaired = build_section(WORKERS[-2:], tree, cache, AdmissionSettings())

    assert section["read"]["records_read"] == 1  # the worker with files, read again
    assert all(isinstance(entry["evidence"]["missing"], dict)
               and isinstance(entry["evidence"]["errors"], list)
               for entry in repaired.values())
