"""The scheduler's accounting of a job, behind one small interface.

Everything above this module (analysis, the JSON document, pages, email) reads a JobRecord
and never names the scheduler: Slurm's `sacct` is one implementation (`usage.sacct`), a
database view or HTCondor's job history can be others.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Optional, Protocol

from clusterwatch.errors import ConfigError

# A job as users write it: 1234, an array task 1234_7, a heterogeneous component 1234+1.
# Anything else (ranges like 1234_[1-5], steps, text) is refused before a program runs.
JOBID_PATTERN = re.compile(r"[0-9]{1,12}(?:[_+][0-9]{1,9})?")

# A user name as the reports accept one (the API's, the coordinators file's): what Slurm's
# accounts are made of on the sites we know, no path or list separator.
USER_NAME_PATTERN = re.compile(r"[A-Za-z0-9._-][A-Za-z0-9._@-]{0,63}")

RUNNING_STATES = frozenset({"RUNNING", "PENDING", "SUSPENDED", "REQUEUED", "RESIZING",
                            "CONFIGURING", "COMPLETING", "STAGE_OUT", "SIGNALING"})


@dataclass(frozen=True)
class JobRecord:
    """One job as accounting knows it. Sizes in bytes, durations in seconds, times aware.

    None means "accounting does not say" (a running job has no end, a job without a memory
    request has no memory_requested_bytes), never zero.
    """

    jobid: str
    user: str
    account: str
    partition: str
    state: str  # upper case, e.g. COMPLETED, CANCELLED, RUNNING, OUT_OF_MEMORY
    state_reason: str  # what follows the state word, e.g. "by 1000"; "" when nothing
    start: Optional[datetime]
    end: Optional[datetime]
    elapsed_s: int
    cpus_allocated: int
    memory_requested_bytes: Optional[int]
    gpus: int
    nodes: int
    nodelist: str
    max_rss_bytes: Optional[int]  # the largest MaxRSS of the job's steps
    total_cpu_s: Optional[float]  # user + system CPU time of all steps
    user_cpu_s: Optional[float]
    system_cpu_s: Optional[float]
    time_limit_s: Optional[int]  # None: unlimited or unknown
    name: str
    exit_code: str
    # The scheduler's own number of the job (sacct's JobIDRaw: 130 for array task 123_4, 124
    # for component 123+1), which the exporter's series carry as `jobid` (the number of the
    # job's cgroup). "" when the source does not say: the series are then asked by `jobid`.
    jobid_raw: str = ""

    @property
    def running(self) -> bool:
        """Still pending or running: figures are so far, not final."""
        return self.state in RUNNING_STATES or self.end is None


@dataclass(frozen=True)
class Unreadable:
    """A line of accounting's answer that could not be read: left out of a listing, said."""

    jobid: str  # its job id when that much was readable and of a job id's form, else ""
    reason: str  # e.g. "sacct line 3: field Start: not a time: 'notatime'" (no other content)


class Listing(list[JobRecord]):
    """The jobs of a listing (a list, so callers that only iterate need not know more), with
    what was left out of it: the unreadable lines, and whether it was cut at `limit` jobs
    (the newest of the period for a user's list; the earliest ended for the poller)."""

    def __init__(self, jobs: Iterable[JobRecord] = (), *,
                 unreadable: Iterable[Unreadable] = (), limit: Optional[int] = None,
                 cut: bool = False) -> None:
        super().__init__(jobs)
        self.unreadable = list(unreadable)
        self.limit = limit
        self.cut = cut


class AccountingError(Exception):
    """Accounting could not answer. The message is one line, safe to show and log."""


class InvalidJobId(AccountingError):
    """The job id is not of a form any job has."""

    def __init__(self, jobid: str) -> None:
        super().__init__(f"not a job id: {jobid[:40]!r}")


class UnknownJob(AccountingError):
    """Accounting has no job with this id (yet: slurmdbd may lag a few seconds)."""

    def __init__(self, jobid: str) -> None:
        super().__init__(f"job {jobid} is unknown to accounting")
        self.jobid = jobid


class AccountingFailed(AccountingError):
    """The accounting source failed, timed out or answered something unreadable."""


class AccountingConfigError(AccountingError, ConfigError):
    """The accounting source is misconfigured (e.g. the program does not exist): exit 78."""


def check_array_id(array_id: str) -> str:
    """The id when it is a plain job number, as an array's id is; InvalidJobId otherwise."""
    if not array_id.isascii() or not array_id.isdigit() or len(array_id) > 12:
        raise InvalidJobId(array_id)
    return array_id


def array_task_number(jobid: str) -> Optional[int]:
    """The task number of an array task's id (`123_4`: 4); None for a line of tasks not
    started (`123_[5-100]`) or any other id."""
    _array, underscore, task = jobid.partition("_")
    return int(task) if underscore and task.isascii() and task.isdigit() else None


def check_jobid(jobid: str) -> str:
    """The job id when it has a valid form; InvalidJobId otherwise."""
    if not JOBID_PATTERN.fullmatch(jobid):
        raise InvalidJobId(jobid)
    return jobid


class Accounting(Protocol):
    """What the usage reports ask of a scheduler's accounting."""

    def job(self, jobid: str) -> JobRecord:
        """The job; UnknownJob when accounting has none, InvalidJobId for a malformed id."""
        ...

    def jobs_of_user(self, user: str, since: datetime,
                     limit: Optional[int] = None) -> Listing:
        """The user's jobs that ran or were pending at or after `since`; with `limit`, the
        newest `limit` of them by start (pending jobs, which have none, count as newest)."""
        ...

    def jobs_ended_since(self, since: datetime, limit: Optional[int] = None) -> Listing:
        """Every user's jobs that ended at or after `since`, oldest end first; with `limit`,
        the first `limit` of them (the rest are for a later call from the last one's end)."""
        ...

    def array_tasks(self, array_id: str) -> Listing:
        """The tasks of the array whose id is `array_id` (`123`: `123_1`, `123_2`, and a
        line such as `123_[5-100]` for those not started yet), in task order; empty when
        `array_id` is no array's (a plain job, or a task's own number). InvalidJobId when
        it is not a plain number."""
        ...

    def running_jobs(self) -> Listing:
        """Every user's jobs that are RUNNING now (not pending, suspended or completing),
        each array task and heterogeneous component on its own, in no promised order: what
        usage_watch looks at."""
        ...
