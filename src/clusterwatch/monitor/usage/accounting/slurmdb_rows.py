"""A row of the restricted view (slurmdb_view.COLUMNS) -> JobRecord, as sacct would print it.

Slurm stores what sacct prints in raw form: the state as slurm.h's `enum job_states` with
flag bits, times as epoch seconds (0: not yet), the time limit in minutes, the exit code as a
wait status, resources as TRES strings of ids (`1=2,2=8192,4=1,1001=1`: cpu, mem in MiB,
node, and gres/gpu under whatever id the site's tres_table gave it). These functions decode
them the way sacct 22.05 does. The view has no step data: MaxRSS and CPU times are None
("not measured"), never 0.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any, Callable, Optional

from clusterwatch.monitor.usage.accounting.interface import AccountingFailed, JobRecord

NO_VAL = 0xFFFFFFFE  # slurm.h: "no value" of a uint32
INFINITE = 0xFFFFFFFF
MEM_PER_CPU = 1 << 63  # mem_req's flag: the number is per allocated CPU
TRES_CPU, TRES_MEM, TRES_NODE = 1, 2, 4  # fixed ids of tres_table

# slurm.h, enum job_states (values 0-11), and job_state_string()'s names.
BASE_STATES = ("PENDING", "RUNNING", "SUSPENDED", "COMPLETED", "CANCELLED", "FAILED",
               "TIMEOUT", "NODE_FAIL", "PREEMPTED", "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY")
JOB_CANCELLED = 4
STATE_BASE = 0xFF
# Flag bits, in the order job_state_string() tests them: the first one set names the state.
STATE_FLAGS = (
    (1 << 15, "COMPLETING"), (1 << 23, "STAGE_OUT"), (1 << 14, "CONFIGURING"),
    (1 << 13, "RESIZING"), (1 << 10, "REQUEUED"), (1 << 20, "REQUEUE_FED"),
    (1 << 11, "REQUEUE_HOLD"), (1 << 12, "SPECIAL_EXIT"), (1 << 16, "STOPPED"),
    (1 << 19, "REVOKED"), (1 << 21, "RESV_DEL_HOLD"), (1 << 22, "SIGNALING"),
)


def state_name(state: int, kill_requid: Optional[int]) -> tuple[str, str]:
    """(name, reason) as sacct prints them: (`CANCELLED`, `by 1000`), (`COMPLETED`, ``)."""
    for bit, name in STATE_FLAGS:
        if state & bit:
            return name, ""
    base = state & STATE_BASE
    if base >= len(BASE_STATES):
        raise ValueError(f"unknown job state {state}")
    reason = ""
    if base == JOB_CANCELLED and kill_requid is not None and kill_requid not in (
            NO_VAL, INFINITE):
        reason = f"by {kill_requid}"
    return BASE_STATES[base], reason


def exit_code(status: int) -> str:
    """`exit:signal` of a wait status, as sacct's ExitCode: 768 -> `3:0`, 9 -> `0:9`."""
    signal = os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0
    return f"{os.WEXITSTATUS(status)}:{signal}"


def parse_tres(text: Optional[str]) -> dict[int, int]:
    """`1=2,2=8192,4=1` -> {1: 2, 2: 8192, 4: 1}; an empty string or NULL is {}."""
    counts: dict[int, int] = {}
    for item in (text or "").split(","):
        if not item:
            continue
        key, sep, value = item.partition("=")
        if not (sep and key.isdigit() and value.isdigit()):
            raise ValueError(f"not a TRES list: {(text or '')[:60]!r}")
        counts[int(key)] = int(value)
    return counts


def time_limit_s(minutes: int) -> Optional[int]:
    return None if minutes in (NO_VAL, INFINITE) else minutes * 60


def moment(epoch: int) -> Optional[datetime]:
    return datetime.fromtimestamp(epoch, timezone.utc) if epoch > 0 else None


def memory_requested(row: Mapping[str, Any], req: dict[int, int], cpus: int,
                     nodes: int) -> Optional[int]:
    """Bytes asked for: tres_req's mem (MiB, the job's total), else mem_req (per CPU when
    its top bit is set, else per node); None when the job asked for nothing."""
    if TRES_MEM in req:
        return req[TRES_MEM] << 20
    mem_req = int(row["mem_req"] or 0)
    if mem_req & MEM_PER_CPU:
        total = (mem_req & ~MEM_PER_CPU) * max(cpus, 1)
    else:
        total = mem_req * max(nodes, 1)
    return (total << 20) or None


def job_id(row: Mapping[str, Any]) -> str:
    """`123`, the array task `123_4`, the heterogeneous component `123+1`."""
    if row["array_task_id"] not in (None, NO_VAL) and row["array_job_id"]:
        return f"{row['array_job_id']}_{row['array_task_id']}"
    if row["het_job_id"] and row["het_job_offset"] not in (None, NO_VAL):
        return f"{row['het_job_id']}+{row['het_job_offset']}"
    return str(row["id_job"])


def to_record(row: Mapping[str, Any], now: datetime,
              user_of_uid: Callable[[int], Optional[str]]) -> JobRecord:
    """The JobRecord of a view row. AccountingFailed (naming the job and field) when a
    value is not what Slurm writes."""
    jobid = job_id(row)
    try:
        state, reason = state_name(int(row["state"]), row["kill_requid"])
        alloc, req = parse_tres(row["tres_alloc"]), parse_tres(row["tres_req"])
    except ValueError as exc:
        raise AccountingFailed(f"slurmdb job {jobid}: {exc}") from None
    start, end = moment(int(row["time_start"])), moment(int(row["time_end"]))
    elapsed = ((end or now) - start).total_seconds() - int(row["time_suspended"] or 0) \
        if start else 0
    cpus = alloc.get(TRES_CPU, 0)
    nodes = int(row["nodes_alloc"] or 0) or req.get(TRES_NODE, 0)
    gpu = row["gpu_tres_id"]
    uid = int(row["uid"])
    return JobRecord(
        jobid=jobid,
        # Jobs without an association have no user name in the database: sacct looks the
        # uid up on its host, and so do we.
        user=row["user"] or user_of_uid(uid) or str(uid),
        account=row["account"] or "",
        partition=row["partition"] or "",
        state=state,
        state_reason=reason,
        start=start,
        end=end,
        elapsed_s=max(0, round(elapsed)),
        cpus_allocated=cpus,
        memory_requested_bytes=memory_requested(row, req, cpus, nodes),
        gpus=(alloc.get(gpu) or req.get(gpu, 0)) if gpu else 0,
        nodes=nodes,
        nodelist=row["nodelist"] or "",
        max_rss_bytes=None,  # step data: not in the view
        total_cpu_s=None,
        user_cpu_s=None,
        system_cpu_s=None,
        time_limit_s=time_limit_s(int(row["timelimit"])),
        name=row["job_name"] or "",
        exit_code=exit_code(int(row["exit_code"] or 0)),
        jobid_raw=str(row["id_job"]),
    )
