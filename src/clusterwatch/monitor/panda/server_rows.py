"""The PanDA server's harvester tables as rows: one TypedDict per table, named as its DDL
names the columns (PostgreSQL, lower case; PanDAWMS/panda-database `pg_PANDA_TABLE.sql`),
and what a source gives when it could not be read.

The remote harvester builder (`remote.builder`) is pure over these rows; the adapter that
reads them selects `columns(Row)` in that order, so a table and its row shape cannot drift
apart. Timestamps are `timestamp` columns without a zone that the server writes in UTC (its
connection runs `SET timezone=0`): a row holds them as naive datetimes meaning UTC (an aware
one is taken at its own zone). Nullable columns are Optional, as in the DDL.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional, TypedDict, TypeVar, Union


class InstanceRow(TypedDict):
    """`harvester_instances`: one row per harvester id, refreshed by its heartbeat."""

    harvester_id: str
    description: Optional[str]
    starttime: Optional[dt.datetime]
    owner: Optional[str]
    hostname: Optional[str]  # the heartbeat's remote address as Apache saw it: "" or an IP
    lastupdate: Optional[dt.datetime]
    sw_version: Optional[str]
    commit_stamp: Optional[str]


class WorkerRow(TypedDict):
    """`harvester_workers`: one row per worker, updated in place (lastupdate moves)."""

    harvesterid: str
    workerid: int
    lastupdate: dt.datetime
    status: str
    batchid: Optional[str]
    nodeid: Optional[str]
    queuename: Optional[str]  # the batch system's queue
    computingsite: Optional[str]  # the PanDA queue
    submittime: Optional[dt.datetime]
    starttime: Optional[dt.datetime]
    endtime: Optional[dt.datetime]
    ncore: Optional[int]
    errorcode: Optional[int]
    stdout: Optional[str]
    stderr: Optional[str]
    batchlog: Optional[str]
    resourcetype: Optional[str]
    nativeexitcode: Optional[int]
    nativestatus: Optional[str]
    diagmessage: Optional[str]
    computingelement: Optional[str]
    njobs: Optional[int]
    submissionhost: Optional[str]
    harvesterhost: Optional[str]
    jdl: Optional[str]
    jobtype: Optional[str]
    pilotstarttime: Optional[dt.datetime]  # the pilot*: NULL for Perlmutter's pilots
    pilotendtime: Optional[dt.datetime]
    pilotstatus: Optional[str]
    pilotstatussynctime: Optional[dt.datetime]
    minramcount: Optional[int]


class DialogRow(TypedDict):
    """`harvester_dialogs`: the harvester's WARNING and ERROR log messages."""

    harvester_id: str
    diagid: int
    modulename: Optional[str]
    identifier: Optional[str]
    creationtime: dt.datetime
    messagelevel: Optional[str]
    diagmessage: Optional[str]


class MetricsRow(TypedDict):
    """`harvester_metrics`: one row per service-monitor cycle and login node."""

    harvester_id: str
    creation_time: dt.datetime
    harvester_host: Optional[str]  # the harvester's socket.getfqdn()
    metrics: Optional[str]  # the harvester's sm_table JSON text, as it was sent


class WorkerStatsRow(TypedDict):
    """`harvester_worker_stats`: a snapshot per site, replaced at every report."""

    harvester_id: str
    computingsite: str
    resourcetype: str
    status: str  # running, submitted, finished, or to_submit (not a worker status)
    jobtype: str
    n_workers: Optional[int]
    lastupdate: dt.datetime


@dataclass(frozen=True)
class SourceFailed:
    """A source that could not be read, and why in one line (never a traceback): what the
    adapter passes instead of rows. The record carries `reason` as that part's error."""

    reason: str

    @classmethod
    def of(cls, error: BaseException) -> SourceFailed:
        """From an exception whose text is safe to show (the adapter's to judge)."""
        text = " ".join(str(error).split())
        return cls(f"{type(error).__name__}: {text}" if text else type(error).__name__)


RowT = TypeVar("RowT")
Rows = Union[Sequence[RowT], SourceFailed]


def columns(row_type: type) -> tuple[str, ...]:
    """A row shape's columns in DDL order, for the adapter's SELECT."""
    return tuple(row_type.__annotations__)
