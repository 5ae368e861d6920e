"""`sacct --parsable2 --noheader --format=FIELDS` output -> JobRecords.

One allocation line per job (JobID `123`, `123_4` for an array task, `123+1` for a
heterogeneous component) followed by its step lines (`123.batch`, `123.extern`, `123.0`).
Memory high-water marks exist only on steps, so MaxRSS is the largest of them.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from datetime import tzinfo
from typing import Callable, Optional, TypeVar

from clusterwatch.monitor.usage.accounting import AccountingFailed, JobRecord
from clusterwatch.monitor.usage.sacct_fields import (
    parse_count,
    parse_duration,
    parse_req_mem,
    parse_size,
    parse_state,
    parse_time,
    parse_time_limit,
    parse_tres,
    tres_gpus,
)

# JobName last: it is the one field a user writes, and it may hold the separator "|".
FIELDS = ("JobID", "JobIDRaw", "User", "Account", "Partition", "State", "Start", "End",
          "Elapsed", "AllocCPUS", "ReqMem", "ReqTRES", "AllocTRES", "NNodes", "NodeList",
          "MaxRSS", "TotalCPU", "UserCPU", "SystemCPU", "Timelimit", "ExitCode", "JobName")
FORMAT = ",".join(FIELDS)

_T = TypeVar("_T")


@dataclass
class _Job:
    line: int
    values: dict[str, str]
    step_rss: list[int] = field(default_factory=list)


def parse_sacct(text: str, zone: Optional[tzinfo] = None) -> list[JobRecord]:
    """Every job in the output, in output order. AccountingFailed on an unreadable line,
    naming its number and field (never its whole content)."""
    return [_record(job, zone) for job in _jobs(text).values()]


def find_job(text: str, jobid: str, zone: Optional[tzinfo] = None) -> Optional[JobRecord]:
    """The job `jobid` names: by JobID (`123`, `123_4`, `123+1`) or by its raw id (array
    task 123_4 is also job 130 to `sacct -j 130`); None when the output has neither."""
    jobs = _jobs(text)
    for job in jobs.values():
        if job.values["JobID"] == jobid:
            return _record(job, zone)
    for job in jobs.values():
        if job.values["JobIDRaw"] == jobid:
            return _record(job, zone)
    return None


def _jobs(text: str) -> dict[str, _Job]:
    jobs: dict[str, _Job] = {}
    for number, line in _lines(text):
        if not line.strip():
            continue
        values = _split(line, number)
        jobid = values["JobID"]
        parent, dot, _step = jobid.partition(".")
        if not dot:
            # The first line of a job is sacct's: a later one can only have been written in
            # the name of this job or of one of its steps.
            jobs.setdefault(jobid, _Job(number, values))
            continue
        job = jobs.get(parent)
        if job is not None:  # a step of a job outside the selection is not ours to report
            rss = _field(number, "MaxRSS", functools.partial(parse_size, values["MaxRSS"]))
            if rss is not None:
                job.step_rss.append(rss)
    return jobs


def _lines(text: str) -> list[tuple[int, str]]:
    """sacct's lines with their numbers. Only "\n" ends one (str.splitlines() would also cut
    at a form feed, U+2028, ... that a job's name may hold), and a piece with fewer
    separators than a line has continues the line before it: JobName, the last field, is
    the only one a user writes, and Slurm keeps a line break typed in it."""
    lines: list[tuple[int, str]] = []
    for number, piece in enumerate(text.rstrip("\n").split("\n"), start=1):
        if lines and piece.count("|") < len(FIELDS) - 1:
            lines[-1] = (lines[-1][0], f"{lines[-1][1]}\n{piece}")
        else:
            lines.append((number, piece))
    return lines


def _split(line: str, number: int) -> dict[str, str]:
    parts = line.split("|", len(FIELDS) - 1)
    if len(parts) != len(FIELDS):
        raise AccountingFailed(
            f"sacct line {number}: {len(parts)} fields where {len(FIELDS)} were asked for"
        )
    return dict(zip(FIELDS, parts))


def _record(job: _Job, zone: Optional[tzinfo]) -> JobRecord:
    v, n = job.values, job.line
    cpus = _field(n, "AllocCPUS", lambda: parse_count(v["AllocCPUS"]))
    nodes = _field(n, "NNodes", lambda: parse_count(v["NNodes"]))
    state, reason = _field(n, "State", lambda: parse_state(v["State"]))
    req_tres = parse_tres(v["ReqTRES"])
    alloc_tres = parse_tres(v["AllocTRES"])
    own_rss = _field(n, "MaxRSS", lambda: parse_size(v["MaxRSS"]))
    rss = [*job.step_rss, *([] if own_rss is None else [own_rss])]
    return JobRecord(
        jobid=v["JobID"],
        user=v["User"],
        account=v["Account"],
        partition=v["Partition"],
        state=state,
        state_reason=reason,
        start=_field(n, "Start", lambda: parse_time(v["Start"], zone)),
        end=_field(n, "End", lambda: parse_time(v["End"], zone)),
        elapsed_s=round(_field(n, "Elapsed", lambda: parse_duration(v["Elapsed"])) or 0),
        cpus_allocated=cpus,
        memory_requested_bytes=_field(n, "ReqMem", lambda: _memory(v, req_tres, cpus, nodes)),
        gpus=_field(n, "AllocTRES", lambda: tres_gpus(alloc_tres) or tres_gpus(req_tres)),
        nodes=nodes,
        nodelist=v["NodeList"],
        max_rss_bytes=max(rss) if rss else None,
        total_cpu_s=_field(n, "TotalCPU", lambda: parse_duration(v["TotalCPU"])),
        user_cpu_s=_field(n, "UserCPU", lambda: parse_duration(v["UserCPU"])),
        system_cpu_s=_field(n, "SystemCPU", lambda: parse_duration(v["SystemCPU"])),
        time_limit_s=_field(n, "Timelimit", lambda: parse_time_limit(v["Timelimit"])),
        name=v["JobName"],
        exit_code=v["ExitCode"],
        jobid_raw=v["JobIDRaw"],
    )


def _memory(values: dict[str, str], req_tres: dict[str, str], cpus: int,
            nodes: int) -> Optional[int]:
    # ReqTRES' mem= is the job's total in every version that has it; ReqMem's meaning
    # changed in 21.08 (per-CPU and per-node suffixes dropped), so it is the fallback.
    if "mem" in req_tres:
        return parse_size(req_tres["mem"], bare_unit="M")
    return parse_req_mem(values["ReqMem"], cpus, nodes)


def _field(line: int, name: str, parse: Callable[[], _T]) -> _T:
    try:
        return parse()
    except ValueError as exc:
        raise AccountingFailed(f"sacct line {line}: field {name}: {exc}") from None
