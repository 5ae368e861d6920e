"""The job page's "what the PanDA server says" section, built from the job tables' rows.

A job lives in one of `jobsdefined4` (defined, assigned, ...), `jobsactive4` (activated,
sent, starting, running, holding, transferring) and `jobsarchived4` (finished, failed,
cancelled, closed) and is moved between them by the server; in the moment of a move it can
be in two, so the row modified last is the truth and the other tables are named. A table
that could not be read is said so; when every table failed (the database is down or slow)
the section says that plainly and the page still shows what the harvesters' records say.

Pure: rows and `now` in, a value for the template out. Times are the server's naive UTC;
its "not set" default is 1970-01-01, shown as not set.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Optional, TypedDict

from clusterwatch.monitor.core.stamps import Stamp, stamp
from clusterwatch.monitor.panda.server_rows import Rows, SourceFailed

JOB_TABLES = ("jobsdefined4", "jobsactive4", "jobsarchived4")
WAITING_FOR_A_PILOT = "activated"  # the status a harvester's fetch takes jobs from
_UNSET_BEFORE = dt.datetime(1970, 1, 2)  # the DDL's default time means "never"


class JobRow(TypedDict):
    """The columns read from each job table (the DDL's names; codes default to 0)."""

    pandaid: int
    jobstatus: str
    jobsubstatus: Optional[str]
    computingsite: Optional[str]
    creationtime: Optional[dt.datetime]
    modificationtime: Optional[dt.datetime]
    starttime: Optional[dt.datetime]
    endtime: Optional[dt.datetime]
    statechangetime: Optional[dt.datetime]
    transexitcode: Optional[str]
    piloterrorcode: Optional[int]
    piloterrordiag: Optional[str]
    exeerrorcode: Optional[int]
    exeerrordiag: Optional[str]
    superrorcode: Optional[int]
    superrordiag: Optional[str]
    ddmerrorcode: Optional[int]
    ddmerrordiag: Optional[str]
    brokerageerrorcode: Optional[int]
    brokerageerrordiag: Optional[str]
    jobdispatchererrorcode: Optional[int]
    jobdispatchererrordiag: Optional[str]
    taskbuffererrorcode: Optional[int]
    taskbuffererrordiag: Optional[str]


TIMES = (("Created", "creationtime"), ("Modified", "modificationtime"),
         ("State changed", "statechangetime"), ("Started", "starttime"),
         ("Ended", "endtime"))
ERRORS = (("Pilot", "pilot"), ("Payload (exe)", "exe"), ("Supervisor", "sup"),
          ("Data management (ddm)", "ddm"), ("Brokerage", "brokerage"),
          ("Job dispatcher", "jobdispatcher"), ("Task buffer", "taskbuffer"))


@dataclass(frozen=True)
class JobError:
    source: str
    code: Optional[str]
    diag: str


@dataclass(frozen=True)
class JobFacts:
    table: str
    status: str
    substatus: str
    queue: Optional[str]
    times: list[tuple[str, Optional[Stamp]]]
    errors: list[JobError]
    also_in: list[str]  # other tables holding the job (a move in progress)

    @property
    def waiting_for_a_pilot(self) -> bool:
        return self.status == WAITING_FOR_A_PILOT


@dataclass(frozen=True)
class JobTruth:
    pandaid: int
    facts: Optional[JobFacts]
    failed: list[str]  # "table: why", one per table not read
    unreachable: Optional[str]  # every table failed for this one reason

    @property
    def queue_to_watch(self) -> Optional[str]:
        """The queue whose fetches matter: only while the job waits for a pilot."""
        if self.facts is not None and self.facts.waiting_for_a_pilot:
            return self.facts.queue
        return None


def job_truth(pandaid: int, rows: Mapping[str, Rows[JobRow]], now: dt.datetime) -> JobTruth:
    """The section for `pandaid` from each job table's rows (or why it was not read)."""
    failed = {table: part.reason for table, part in rows.items()
              if isinstance(part, SourceFailed)}
    found = [(table, row) for table in JOB_TABLES
             for row in _rows(rows.get(table, ())) if row["pandaid"] == pandaid]
    reasons = set(failed.values())
    unreachable = (reasons.pop() if len(failed) == len(JOB_TABLES) and len(reasons) == 1
                   else None)
    facts = None
    if found:
        table, row = max(found, key=lambda one: _time(one[1]["modificationtime"]) or
                         dt.datetime.min)
        facts = _facts(table, row, sorted({t for t, _ in found} - {table}), now)
    return JobTruth(pandaid, facts, [f"{t}: {why}" for t, why in sorted(failed.items())],
                    unreachable)


def _rows(part: Rows[JobRow]) -> Sequence[JobRow]:
    return () if isinstance(part, SourceFailed) else part


def _facts(table: str, row: JobRow, also_in: list[str], now: dt.datetime) -> JobFacts:
    values: Mapping[str, object] = row  # read by column name
    times = [(label, _stamp(values.get(column), now)) for label, column in TIMES]
    errors = [JobError("Transformation exit code", _text(row["transexitcode"]), "")
              ] if _text(row["transexitcode"]) not in (None, "0") else []
    for label, prefix in ERRORS:
        code, diag = values.get(f"{prefix}errorcode"), _text(values.get(f"{prefix}errordiag"))
        if (code not in (None, 0)) or diag:
            errors.append(JobError(label, None if code is None else str(code), diag or ""))
    return JobFacts(table, row["jobstatus"], row["jobsubstatus"] or "",
                    row["computingsite"] or None, times, errors, also_in)


def _time(value: object) -> Optional[dt.datetime]:
    if not isinstance(value, dt.datetime):
        return None
    naive = value.astimezone(dt.timezone.utc).replace(tzinfo=None) if value.tzinfo else value
    return naive if naive >= _UNSET_BEFORE else None


def _stamp(value: object, now: dt.datetime) -> Optional[Stamp]:
    moment = _time(value)
    return stamp(moment, now) if moment is not None else None


def _text(value: object) -> Optional[str]:
    if value is None:
        return None
    text = " ".join(str(value).split())
    return text or None
