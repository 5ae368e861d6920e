"""Slurm's accounting database through the restricted view: the Accounting protocol's second
Slurm implementation (CLUSTERWATCH_ACCOUNTING=slurmdb).

It logs in as the read-only user `create_slurmdb_view` made and reads `<schema>.jobs` only,
one short connection per call, each with connect and read timeouts. It selects what sacct
selects (`-j`, `--user --starttime`, `--allusers --starttime`, `--state=RUNNING`) so the
two sources agree on every field the view has; MaxRSS and CPU times are not in the view and
are None.
`SlurmDbAccounting.from_environment()` is what the monitor constructs (slurmdb_settings).
"""

from __future__ import annotations

import os
import pwd
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any, Callable, Optional

import pymysql
import pymysql.cursors

from clusterwatch.monitor.usage.accounting.interface import (
    AccountingConfigError,
    AccountingFailed,
    JobRecord,
    Listing,
    UnknownJob,
    Unreadable,
    check_array_id,
    check_jobid,
)
from clusterwatch.monitor.usage.accounting.slurmdb_connect import (
    LOGIN_REFUSED,
    MISSING,
    NOT_GRANTED,
    connect,
    error_code,
    server_message,
)
from clusterwatch.monitor.usage.accounting.slurmdb_rows import job_id, to_record
from clusterwatch.monitor.usage.accounting.slurmdb_settings import SlurmDbSettings, read_settings
from clusterwatch.monitor.usage.accounting.slurmdb_sql_view import COLUMN_NAMES, VIEW

Clock = Callable[[], datetime]
JOB_RUNNING = 1  # slurm.h, enum job_states


def _user_of_uid(uid: int) -> Optional[str]:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return None


def _uid_of_user(user: str) -> Optional[int]:
    try:
        return pwd.getpwnam(user).pw_uid
    except KeyError:
        return None


class SlurmDbAccounting:
    """Reads `settings.schema`.jobs as `settings.user`. `clock`, `user_of_uid` and
    `uid_of_user` are the environment (defaults: now, and this host's users, as sacct's)."""

    def __init__(self, settings: SlurmDbSettings, *, clock: Optional[Clock] = None,
                 user_of_uid: Callable[[int], Optional[str]] = _user_of_uid,
                 uid_of_user: Callable[[str], Optional[int]] = _uid_of_user) -> None:
        self.settings = settings
        self._clock = clock or (lambda: datetime.now(timezone.utc))
        self._user_of_uid = user_of_uid
        self._uid_of_user = uid_of_user
        columns = ", ".join(f"`{name}`" for name in COLUMN_NAMES)
        self._select = f"SELECT {columns} FROM `{settings.schema}`.`{VIEW}` WHERE "  # noqa: S608

    @classmethod
    def from_environment(cls, environ: Optional[Mapping[str, str]] = None
                         ) -> SlurmDbAccounting:
        """From CLUSTERWATCH_SLURMDB_* (slurmdb_settings); AccountingConfigError when wrong."""
        return cls(read_settings(os.environ if environ is None else environ))

    def job(self, jobid: str) -> JobRecord:
        check_jobid(jobid)
        if "_" in jobid:
            array, task = jobid.split("_")
            where, args = "`array_job_id` = %s AND `array_task_id` = %s", [array, task]
        elif "+" in jobid:
            het, offset = jobid.split("+")
            where, args = "`het_job_id` = %s AND `het_job_offset` = %s", [het, offset]
        else:  # sacct -j N: the job N, or the array task or component whose own id is N
            where, args = "`id_job` = %s", [jobid]
        # A requeued job keeps its id: sacct shows the latest submission.
        found = self._rows(where + " ORDER BY `time_submit` DESC LIMIT 1", args)
        if not found:
            raise UnknownJob(jobid)
        return found[0]

    def jobs_of_user(self, user: str, since: datetime,
                     limit: Optional[int] = None) -> Listing:
        # sacct --user resolves the name to a uid on its host; a user that host does not
        # know is looked for by the association's user name.
        uid = self._uid_of_user(user)
        who, args = ("`uid` = %s", [uid]) if uid is not None else ("`user` = %s", [user])
        # The newest first, as sacct's bounded listing keeps them: a pending job (no start).
        return self._listing(f"{who} AND {_WINDOW} ORDER BY `time_start` = 0 DESC, "
                             "`time_start` DESC, `id_job` DESC", [*args, *self._window(since)],
                             limit)

    def jobs_ended_since(self, since: datetime, limit: Optional[int] = None) -> Listing:
        # `time_end` = 0 is a job not ended, and the state says the rest (slurmdb_rows).
        listing = self._listing(f"`time_end` >= %s AND {_WINDOW} ORDER BY `time_end`, `id_job`",
                                [_epoch(since), *self._window(since)], limit)
        ended = Listing([r for r in listing if not r.running and r.end is not None
                         and r.end >= since], unreadable=listing.unreadable,
                        limit=listing.limit, cut=listing.cut)
        ended.sort(key=lambda r: (r.end, r.jobid))
        return ended

    def array_tasks(self, array_id: str) -> Listing:
        check_array_id(array_id)
        # A requeued task keeps its id: the latest submission stands, as sacct shows it.
        listing = self._listing("`array_job_id` = %s ORDER BY `array_task_id`, "
                                "`time_submit` DESC", [array_id], None)
        latest: dict[str, JobRecord] = {}
        for job in listing:
            latest.setdefault(job.jobid, job)
        return Listing(latest.values(), unreadable=listing.unreadable)

    def running_jobs(self) -> Listing:
        # RUNNING is state 1 of enum job_states with no flag bit (a completing or
        # configuring job has one): started, not ended, as sacct --state=RUNNING lists them.
        listing = self._listing("`state` = %s AND `time_start` > 0 AND `time_end` = 0 "
                                "ORDER BY `id_job`", [JOB_RUNNING], None)
        return Listing([job for job in listing if job.state == "RUNNING"],
                       unreadable=listing.unreadable)

    def _window(self, since: datetime) -> list[int]:
        return [_epoch(self._clock()), _epoch(since)]

    def _listing(self, where: str, args: Sequence[Any], limit: Optional[int]) -> Listing:
        # One row past the limit says whether there were more.
        bound = "" if limit is None else f" LIMIT {int(limit) + 1}"
        rows = self._fetch(where + bound, args)
        cut = limit is not None and len(rows) > limit
        now, listing = self._clock(), Listing(limit=limit, cut=cut)
        for row in rows[:limit]:
            try:
                listing.append(to_record(row, now, self._user_of_uid))
            except AccountingFailed as exc:  # one bad row spoils no other
                listing.unreadable.append(Unreadable(job_id(row), str(exc)))
        return listing

    def _rows(self, where: str, args: Sequence[Any]) -> list[JobRecord]:
        now = self._clock()
        return [to_record(row, now, self._user_of_uid) for row in self._fetch(where, args)]

    def _fetch(self, where: str, args: Sequence[Any]) -> list[dict[str, Any]]:
        settings = self.settings
        try:
            connection = connect(host=settings.host, port=settings.port, user=settings.user,
                                 password=settings.password, timeout_s=settings.timeout_s)
            try:
                with connection.cursor(pymysql.cursors.DictCursor) as cursor:
                    cursor.execute(self._select + where, tuple(args))
                    return list(cursor.fetchall())
            finally:
                connection.close()
        except pymysql.MySQLError as exc:
            raise self._failure(exc) from None

    def _failure(self, exc: BaseException) -> Exception:
        message = server_message(exc, (self.settings.password,))
        code, user, view = error_code(exc), self.settings.user, f"{self.settings.schema}.{VIEW}"
        if code in LOGIN_REFUSED:
            return AccountingConfigError(
                f"the Slurm accounting database refused {user}: {message} (check "
                "CLUSTERWATCH_SLURMDB_URL and the password file; create_slurmdb_view resets "
                "both)")
        if code in NOT_GRANTED or code in MISSING:
            return AccountingConfigError(
                f"the Slurm accounting database lets {user} read no view {view}: {message} "
                "(create it and its grant with clusterwatch monitor create_slurmdb_view "
                "--schema, as in CLUSTERWATCH_SLURMDB_URL)")
        return AccountingFailed(f"the Slurm accounting database failed: {message}")


# sacct --starttime S: jobs eligible before now that had not ended before S.
_WINDOW = ("`time_eligible` > 0 AND `time_eligible` < %s "
           "AND (`time_end` >= %s OR `time_end` = 0)")


def _epoch(moment: datetime) -> int:
    return int(moment.timestamp())
