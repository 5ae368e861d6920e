"""`sacct --parsable2 --noheader --delimiter=D --format=FIELDS` output -> a Listing.

One allocation line per job (JobID `123`, `123_4` for an array task, `123+1` for a
heterogeneous component) followed by its step lines (`123.batch`, `123.extern`, `123.0`).
Memory high-water marks exist only on steps, so MaxRSS is the largest of them. Records come
from sacct_records (no field can make or split one); a line that cannot be read is left out
of the listing and named in it (Listing.unreadable), so one bad line spoils nothing else.

A listing may be bounded: `limit` jobs kept by a rank read from one or two fields of each
allocation line (its start, its end), so a history of a million lines costs the memory of
`limit` jobs, not of the whole output.
"""

from __future__ import annotations

import functools
import heapq
import itertools
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime, tzinfo
from typing import Callable, Optional, TypeVar, Union

from clusterwatch.monitor.usage.accounting.interface import (
    JOBID_PATTERN,
    RUNNING_STATES,
    AccountingFailed,
    JobRecord,
    Listing,
    Unreadable,
)
from clusterwatch.monitor.usage.accounting.sacct_fields import (
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
from clusterwatch.monitor.usage.accounting.sacct_records import records

# JobName last: it is the one field a user writes (sacct_records reads it up to the last
# line end before the next record).
FIELDS = ("JobID", "JobIDRaw", "User", "Account", "Partition", "State", "Start", "End",
          "Elapsed", "AllocCPUS", "ReqMem", "ReqTRES", "AllocTRES", "NNodes", "NodeList",
          "MaxRSS", "TotalCPU", "UserCPU", "SystemCPU", "Timelimit", "ExitCode", "JobName")
FORMAT = ",".join(FIELDS)

# The one line sacct prints for an array's tasks not started yet (`123_[4-100%5]`): a
# pending job on its user's list, never a job of its own to mail.
_ARRAY_RANGE = re.compile(r"[0-9]{1,12}_\[[0-9,%:-]{1,200}\]")

_T = TypeVar("_T")
_N = TypeVar("_N", int, float)
Values = dict[str, str]
# A job's place in a bounded listing (larger is kept first); None: not in the listing.
Rank = Callable[[Values, Optional[tzinfo]], Optional[float]]


class _Unreadable(Exception):
    """One line cannot be read: its reason, already naming the line and the field."""


@dataclass
class _Job:
    line: int
    values: Values
    step_rss: list[int] = field(default_factory=list)


def newest_start(values: Values, zone: Optional[tzinfo]) -> Optional[float]:
    """A user's list keeps the newest jobs: by start, a pending job (none yet) newest."""
    start = _named("Start", lambda: parse_time(values["Start"], zone))
    return math.inf if start is None else start.timestamp()


def ended_since(since: datetime) -> Rank:
    """The poller's list: jobs that ended at or after `since`, the earliest end first."""

    def rank(values: Values, zone: Optional[tzinfo]) -> Optional[float]:
        end = _named("End", lambda: parse_time(values["End"], zone))
        state, _reason = _named("State", lambda: parse_state(values["State"]))
        if (end is None or state in RUNNING_STATES or end < since
                or _ARRAY_RANGE.fullmatch(values["JobID"])):
            return None
        return -end.timestamp()

    return rank


def parse_sacct(output: Union[str, bytes, Iterable[bytes]], delimiter: str = "|", *,
                zone: Optional[tzinfo] = None, rank: Optional[Rank] = None,
                limit: Optional[int] = None) -> Listing:
    """Every readable job of the output, in output order (or, with `rank`, the jobs it
    ranks, best first, at most `limit` of them); the unreadable lines in `.unreadable`,
    each named by its number and field (never its content)."""
    collector = _Collector(rank, limit, zone)
    for number, values in records(_chunks(output), delimiter.encode(), len(FIELDS)):
        collector.add(number, dict(zip(FIELDS, values)))
    return collector.listing()


def find_job(output: Union[str, bytes, Iterable[bytes]], jobid: str, delimiter: str = "|",
             zone: Optional[tzinfo] = None) -> Optional[JobRecord]:
    """The job `jobid` names: by JobID (`123`, `123_4`, `123+1`) or by its raw id (array
    task 123_4 is also job 130 to `sacct -j 130`); None when the output has neither.
    AccountingFailed when its line is unreadable."""
    collector = _Collector(None, None, zone)
    for number, values in records(_chunks(output), delimiter.encode(), len(FIELDS)):
        collector.add(number, dict(zip(FIELDS, values)))
    jobs = collector.jobs
    components = [job for job in jobs.values()
                  if job.values["JobID"].partition("+")[0] == jobid and "+" in job.values["JobID"]]
    if components:  # a heterogeneous job asked for by its own id: all its components
        try:
            return _heterogeneous(jobid, [_record(job, zone) for job in components])
        except _Unreadable as exc:
            raise AccountingFailed(str(exc)) from None
    for key in ("JobID", "JobIDRaw"):
        for job in jobs.values():
            if job.values[key] == jobid:
                try:
                    return _record(job, zone)
                except _Unreadable as exc:
                    raise AccountingFailed(str(exc)) from None
    for lost in collector.unreadable:
        if lost.jobid == jobid:
            raise AccountingFailed(lost.reason)
    return None


def _chunks(output: Union[str, bytes, Iterable[bytes]]) -> Iterable[bytes]:
    if isinstance(output, str):
        return [output.encode("utf-8", "surrogateescape")]
    if isinstance(output, bytes):
        return [output]
    return output


class _Collector:
    """Allocation lines kept (all, or the `limit` best ranked), their steps' MaxRSS."""

    def __init__(self, rank: Optional[Rank], limit: Optional[int],
                 zone: Optional[tzinfo]) -> None:
        self.rank, self.limit, self.zone = rank, limit, zone
        self.jobs: dict[str, _Job] = {}
        self.unreadable: list[Unreadable] = []
        self.cut = False
        self._heap: list[tuple[float, int, str]] = []  # (rank, order, jobid): worst first
        self._order = itertools.count()

    def add(self, number: int, values: Values) -> None:
        jobid = values["JobID"]
        parent, dot, step = jobid.partition(".")
        if dot and _ARRAY_RANGE.fullmatch(parent):
            return  # the steps of tasks not started: none
        if (not (JOBID_PATTERN.fullmatch(parent) or _ARRAY_RANGE.fullmatch(parent))
                or (dot and not step)):
            self._lose(number, "", f"sacct line {number}: field JobID: not a job id")
            return
        if "\0" in "".join(values.values()):  # no Slurm string holds one; PostgreSQL refuses it
            self._lose(number, parent, f"sacct line {number}: a NUL byte")
            return
        if dot:
            job = self.jobs.get(parent)
            if job is None:  # a step of a job outside the selection is not ours to report
                return
            try:
                rss = _field(number, "MaxRSS", functools.partial(parse_size, values["MaxRSS"]))
            except _Unreadable as exc:
                self._drop(parent)
                self._lose(number, parent, str(exc))
                return
            if rss is not None:
                job.step_rss.append(rss)
            return
        if jobid in self.jobs:  # the first line of a job is the one sacct means
            return
        if self.rank is None:
            self.jobs[jobid] = _Job(number, values)
            return
        try:
            place = self.rank(values, self.zone)
        except ValueError as exc:
            self._lose(number, jobid, f"sacct line {number}: {exc}")
            return
        if place is None:
            return
        entry = (place, next(self._order), jobid)
        if self.limit is not None and len(self._heap) >= self.limit:
            self.cut = True
            if entry <= self._heap[0]:
                return
            _place, _order, worst = heapq.heapreplace(self._heap, entry)
            del self.jobs[worst]
        else:
            heapq.heappush(self._heap, entry)
        self.jobs[jobid] = _Job(number, values)

    def listing(self) -> Listing:
        order = list(self.jobs.values())
        if self.rank is not None:
            places = {jobid: (place, seq) for place, seq, jobid in self._heap}
            order.sort(key=lambda job: places[job.values["JobID"]], reverse=True)
        found: list[JobRecord] = []
        for job in order:
            try:
                found.append(_record(job, self.zone))
            except _Unreadable as exc:
                self._lose(job.line, job.values["JobID"], str(exc))
        return Listing(found, unreadable=self.unreadable, limit=self.limit, cut=self.cut)

    def _drop(self, jobid: str) -> None:
        # A job one of whose steps is unreadable has no MaxRSS to report: out, and said.
        self.jobs.pop(jobid, None)
        self._heap = [entry for entry in self._heap if entry[2] != jobid]
        heapq.heapify(self._heap)

    def _lose(self, number: int, jobid: str, reason: str) -> None:
        self.unreadable.append(Unreadable(jobid if JOBID_PATTERN.fullmatch(jobid) else "",
                                          reason))


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


def _heterogeneous(jobid: str, parts: list[JobRecord]) -> JobRecord:
    """One heterogeneous job from its components (`87100+0`, `87100+1`), as its user and
    MailProg know it: what they were given and used added up, its span from the first start
    to the last end, the first component's name, state and raw id (SLURM_JOB_ID's)."""
    first = parts[0]
    starts = [p.start for p in parts if p.start is not None]
    ends = [p.end for p in parts if p.end is not None]

    def total(values: list[Optional[_N]]) -> Optional[_N]:
        known = [v for v in values if v is not None]
        return sum(known[1:], known[0]) if known else None

    return replace(
        first, jobid=jobid,
        start=min(starts) if starts else None,
        end=max(ends) if len(ends) == len(parts) else None,  # it ends with its last part
        elapsed_s=max(p.elapsed_s for p in parts),
        cpus_allocated=sum(p.cpus_allocated for p in parts),
        memory_requested_bytes=total([p.memory_requested_bytes for p in parts]),
        gpus=sum(p.gpus for p in parts), nodes=sum(p.nodes for p in parts),
        nodelist=",".join(p.nodelist for p in parts if p.nodelist),
        max_rss_bytes=total([p.max_rss_bytes for p in parts]),
        total_cpu_s=total([p.total_cpu_s for p in parts]),
        user_cpu_s=total([p.user_cpu_s for p in parts]),
        system_cpu_s=total([p.system_cpu_s for p in parts]),
        state=next((p.state for p in parts if p.state != "COMPLETED"), first.state))


def _memory(values: dict[str, str], req_tres: dict[str, str], cpus: int,
            nodes: int) -> Optional[int]:
    # ReqTRES' mem= is the job's total in every version that has it; ReqMem's meaning
    # changed in 21.08 (per-CPU and per-node suffixes dropped), so it is the fallback.
    if "mem" in req_tres:
        return parse_size(req_tres["mem"], bare_unit="M")
    return parse_req_mem(values["ReqMem"], cpus, nodes)


def _named(name: str, parse: Callable[[], _T]) -> _T:
    try:
        return parse()
    except ValueError as exc:
        raise ValueError(f"field {name}: {exc}") from None


def _field(line: int, name: str, parse: Callable[[], _T]) -> _T:
    try:
        return parse()
    except ValueError as exc:
        raise _Unreadable(f"sacct line {line}: field {name}: {exc}") from None
