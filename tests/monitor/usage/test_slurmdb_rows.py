"""Rows of the restricted view decoded as sacct prints them (slurmdb_rows), from plain data."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Optional

import pytest

from clusterwatch.monitor.usage.accounting.interface import AccountingFailed
from clusterwatch.monitor.usage.accounting.slurmdb_rows import (
    INFINITE,
    MEM_PER_CPU,
    NO_VAL,
    exit_code,
    parse_tres,
    state_name,
    to_record,
)
from clusterwatch.monitor.usage.accounting.slurmdb_sql_view import COLUMN_NAMES

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)
START = int(NOW.timestamp()) - 3600

# A finished two-CPU job as slurmdbd 22.05 stores it (values read from a real row).
ROW: dict[str, Any] = {
    "id_job": 4242, "array_job_id": 0, "array_task_id": NO_VAL, "het_job_id": 0,
    "het_job_offset": NO_VAL, "uid": 1000, "user": "alice", "account": "physics",
    "partition": "cpu", "state": 3, "kill_requid": None, "exit_code": 0,
    "time_submit": START - 10, "time_eligible": START - 10, "time_start": START,
    "time_end": START + 1800, "time_suspended": 0, "timelimit": 120, "nodes_alloc": 1,
    "nodelist": "node01", "mem_req": 8192,
    "tres_req": "1=2,2=8192,4=1,5=2", "tres_alloc": "1=2,2=8192,3=18446744073709551614,4=1,5=2",
    "gpu_tres_id": 1001, "job_name": "analysis",
}


def record(**changes: Any) -> Any:
    return to_record({**ROW, **changes}, NOW, lambda uid: None)


def test_the_sample_row_has_every_column_of_the_view() -> None:
    assert set(ROW) == set(COLUMN_NAMES)


def test_it_reads_a_finished_job_like_sacct() -> None:
    job = record()
    assert (job.jobid, job.user, job.account, job.partition) == ("4242", "alice", "physics",
                                                                 "cpu")
    assert (job.state, job.state_reason, job.exit_code) == ("COMPLETED", "", "0:0")
    assert job.start == datetime.fromtimestamp(START, timezone.utc)
    assert job.elapsed_s == 1800 and job.time_limit_s == 7200
    assert (job.cpus_allocated, job.nodes, job.gpus) == (2, 1, 0)
    assert job.memory_requested_bytes == 8 << 30
    assert (job.nodelist, job.name, job.running) == ("node01", "analysis", False)


def test_figures_the_view_does_not_have_are_not_measured_never_zero() -> None:
    job = record()
    assert (job.max_rss_bytes, job.total_cpu_s, job.user_cpu_s, job.system_cpu_s) == (
        None, None, None, None)


@pytest.mark.parametrize("state, kill_requid, expected", [
    (0, None, ("PENDING", "")), (1, None, ("RUNNING", "")), (2, None, ("SUSPENDED", "")),
    (3, None, ("COMPLETED", "")), (4, None, ("CANCELLED", "")), (4, 1000, ("CANCELLED", "by 1000")),
    (4, 0, ("CANCELLED", "by 0")), (4, INFINITE, ("CANCELLED", "")), (5, None, ("FAILED", "")),
    (6, None, ("TIMEOUT", "")), (7, None, ("NODE_FAIL", "")), (8, None, ("PREEMPTED", "")),
    (9, None, ("BOOT_FAIL", "")), (10, None, ("DEADLINE", "")), (11, None, ("OUT_OF_MEMORY", "")),
    (1 | 1 << 15, None, ("COMPLETING", "")), (3 | 1 << 10, None, ("REQUEUED", "")),
    (1 << 13 | 1 << 10, None, ("RESIZING", "")),  # the first flag in sacct's order wins
    (5, 1000, ("FAILED", "")),  # who cancelled is said for cancelled jobs only
])
def test_it_names_states_as_slurm_h_and_sacct_do(
    state: int, kill_requid: Optional[int], expected: tuple[str, str]
) -> None:
    assert state_name(state, kill_requid) == expected


def test_a_state_slurm_22_05_does_not_have_is_refused_naming_the_job() -> None:
    with pytest.raises(AccountingFailed, match=r"^slurmdb job 4242: unknown job state 12$"):
        record(state=12)


@pytest.mark.parametrize("status, expected", [(0, "0:0"), (768, "3:0"), (9, "0:9"),
                                              (15, "0:15"), (256 * 255, "255:0")])
def test_it_writes_exit_codes_as_sacct_does(status: int, expected: str) -> None:
    assert exit_code(status) == expected


def test_it_reads_tres_lists_and_refuses_anything_else() -> None:
    assert parse_tres("1=2,2=8192,4=1,1001=4") == {1: 2, 2: 8192, 4: 1, 1001: 4}
    assert parse_tres("") == {} and parse_tres(None) == {}
    for bad in ("1=two", "cpu=2", "1:2", "=2"):
        with pytest.raises(ValueError, match="not a TRES list"):
            parse_tres(bad)
    with pytest.raises(AccountingFailed, match="slurmdb job 4242: not a TRES list"):
        record(tres_alloc="1=2,mem=8G")


def test_it_counts_gpus_under_the_sites_gres_gpu_id() -> None:
    assert record(tres_alloc="1=2,2=100,1001=4").gpus == 4
    assert record(tres_alloc="", tres_req="1=2,1001=2").gpus == 2  # pending: asked for
    assert record(tres_alloc="1=2,1001=4", gpu_tres_id=None).gpus == 0  # gpus not tracked
    assert record(tres_alloc="1=2,1002=4", gpu_tres_id=1001).gpus == 0  # another gres


def test_memory_is_the_requested_total_else_mem_req_per_cpu_or_node() -> None:
    assert record(tres_req="1=4", mem_req=1000 | MEM_PER_CPU,
                  tres_alloc="1=4").memory_requested_bytes == 4000 << 20
    assert record(tres_req="1=4", mem_req=1000, nodes_alloc=2).memory_requested_bytes == (
        2000 << 20)
    assert record(tres_req="1=4", mem_req=0).memory_requested_bytes is None


@pytest.mark.parametrize("changes, expected", [
    ({"array_job_id": 4240, "array_task_id": 7}, "4240_7"),
    ({"array_job_id": 4240, "array_task_id": NO_VAL}, "4242"),  # an array's pending rest
    ({"het_job_id": 4241, "het_job_offset": 1}, "4241+1"),
    ({"het_job_id": 4242, "het_job_offset": 0}, "4242+0"),
])
def test_it_writes_job_ids_as_users_write_them(changes: dict[str, int], expected: str) -> None:
    assert record(**changes).jobid == expected


def test_a_running_job_has_no_end_and_its_time_so_far() -> None:
    job = record(state=1, time_end=0, time_suspended=600, timelimit=INFINITE)
    assert (job.state, job.end, job.running) == ("RUNNING", None, True)
    assert job.elapsed_s == 3600 - 600 and job.time_limit_s is None


def test_a_pending_job_has_no_start_nor_allocation() -> None:
    job = record(state=0, time_start=0, time_end=0, tres_alloc="", nodes_alloc=0,
                 nodelist="None assigned", timelimit=NO_VAL)
    assert (job.start, job.elapsed_s, job.cpus_allocated, job.nodes) == (None, 0, 0, 1)
    assert job.running and job.time_limit_s is None


def test_a_job_without_association_gets_its_users_name_from_the_uid() -> None:
    job = to_record({**ROW, "user": None}, NOW, {1000: "alice"}.get)
    assert job.user == "alice"
    assert to_record({**ROW, "user": None, "uid": 4321}, NOW, lambda uid: None).user == "4321"
