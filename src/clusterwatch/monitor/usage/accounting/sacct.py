"""Slurm's accounting through `sacct`: the Accounting protocol's Slurm implementation.

The program is a parameter (CLUSTERWATCH_SACCT, default `sacct` on PATH). It runs with
SLURM_TIME_FORMAT=%s so times come back as epoch seconds, free of the time zone question,
and within a timeout: a hung slurmdbd must not hold a page or the mail poller forever.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import selectors
import signal
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import IO, Callable, Optional, TypeVar

from clusterwatch.monitor.usage.accounting.interface import (
    AccountingConfigError,
    AccountingFailed,
    JobRecord,
    Listing,
    UnknownJob,
    array_task_number,
    check_array_id,
    check_jobid,
)
from clusterwatch.monitor.usage.accounting.sacct_parse import (
    FORMAT,
    ended_since,
    find_job,
    newest_start,
    parse_sacct,
)

DEFAULT_TIMEOUT_S = 30.0
_STDERR_QUOTE = 200  # characters of sacct's last stderr line kept in the error
_STDERR_KEPT = 64 * 1024  # bytes of stderr kept: its last line is all that is shown
_CHUNK = 1 << 16
_DRAIN_S = 1.0  # after a timeout and the kill: what is left of the output, if it comes

_T = TypeVar("_T")


def new_delimiter() -> str:
    """A separator no job's name holds: chosen now, after every name was written."""
    return f"|{secrets.token_hex(16)}|"


class SacctAccounting:
    """Runs `program --parsable2 --noheader --delimiter=D --format=...` with the selection of
    each call, D new each time (sacct_records says why), and reads its output as a stream."""

    def __init__(self, program: str = "sacct", timeout_s: float = DEFAULT_TIMEOUT_S,
                 environ: Optional[Mapping[str, str]] = None,
                 delimiter: Callable[[], str] = new_delimiter) -> None:
        self.program = program
        self.timeout_s = timeout_s
        self._environ = dict(os.environ if environ is None else environ)
        self._delimiter = delimiter

    def job(self, jobid: str) -> JobRecord:
        check_jobid(jobid)
        record = self._read(["--jobs", jobid],
                            lambda chunks, d: find_job(chunks, jobid, d))
        if record is None:  # sacct says nothing, and exits 0, for a job it does not know
            raise UnknownJob(jobid)
        return record

    def jobs_of_user(self, user: str, since: datetime,
                     limit: Optional[int] = None) -> Listing:
        return self._read(["--user", user, "--starttime", _sacct_time(since)],
                          lambda chunks, d: parse_sacct(chunks, d, rank=newest_start,
                                                        limit=limit))

    def jobs_ended_since(self, since: datetime, limit: Optional[int] = None) -> Listing:
        listing = self._read(["--allusers", "--starttime", _sacct_time(since)],
                             lambda chunks, d: parse_sacct(chunks, d, rank=ended_since(since),
                                                           limit=limit))
        listing.sort(key=lambda r: (r.end, r.jobid))
        return listing

    def array_tasks(self, array_id: str) -> Listing:
        check_array_id(array_id)
        listing = self._read(["--jobs", array_id], lambda chunks, d: parse_sacct(chunks, d))
        # `sacct -j 130` of a task whose own number is 130 lists that task alone: no array's.
        tasks = [job for job in listing if job.jobid.startswith(f"{array_id}_")]
        tasks.sort(key=lambda job: (array_task_number(job.jobid) is None,
                                    array_task_number(job.jobid) or 0, job.jobid))
        return Listing(tasks, unreadable=listing.unreadable)

    def running_jobs(self) -> Listing:
        # sacct --state without --starttime/--endtime takes both as now: the jobs in that
        # state at this moment (sacct(1)), not every job that ever ran. A job that ended in
        # the same second may still be listed in another state: kept out.
        listing = self._read(["--allusers", "--state=RUNNING"],
                             lambda chunks, d: parse_sacct(chunks, d))
        return Listing([job for job in listing if job.state == "RUNNING"],
                       unreadable=listing.unreadable)

    def _read(self, selection: Sequence[str],
              parse: Callable[[Iterator[bytes], str], _T]) -> _T:
        delimiter = self._delimiter()
        argv = [self.program, "--parsable2", "--noheader", f"--delimiter={delimiter}",
                f"--format={FORMAT}", *selection]
        environ = {**self._environ, "SLURM_TIME_FORMAT": "%s"}
        try:
            run = _Run(argv, environ, self.timeout_s)
        except FileNotFoundError:
            raise AccountingConfigError(f"sacct program not found: {self.program}") from None
        except PermissionError:
            raise AccountingConfigError(
                f"sacct program not executable: {self.program}") from None
        with run:
            try:
                found = parse(run.output(), delimiter)
            except AccountingFailed:
                run.wait()  # a failing sacct's own message says more than its broken output
                if not run.timed_out:
                    raise
            else:
                run.wait()
        if run.timed_out:  # what was read before the kill is not the answer
            raise AccountingFailed(f"sacct gave no answer within {self.timeout_s:g} s")
        return found


class _Run:
    """sacct running, its stdout read in chunks as they come, all within one deadline.

    A session of its own, so a timeout ends the whole group: a wrapper script's children
    would otherwise keep the pipes open and the wait going past the timeout.
    """

    def __init__(self, argv: list[str], environ: dict[str, str], timeout_s: float) -> None:
        self._process = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                         env=environ, start_new_session=True)
        self._deadline = time.monotonic() + timeout_s
        self._stderr = b""
        self.timed_out = False

    def __enter__(self) -> _Run:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop()
        for pipe in (self._process.stdout, self._process.stderr):
            if pipe is not None:
                pipe.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._process.wait(timeout=_DRAIN_S)

    def output(self) -> Iterator[bytes]:
        """stdout's chunks (stderr's tail kept meanwhile); at the deadline, the group is
        killed and `timed_out` set."""
        process = self._process
        assert process.stdout is not None and process.stderr is not None
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            selector.register(process.stderr, selectors.EVENT_READ)
            while selector.get_map():
                left = self._deadline - time.monotonic()
                if left <= 0:
                    self.timed_out = True
                    self._stop()
                    return
                for key, _events in selector.select(timeout=left):
                    pipe: IO[bytes] = key.fileobj  # type: ignore[assignment]
                    chunk = os.read(pipe.fileno(), _CHUNK)
                    if not chunk:
                        selector.unregister(pipe)
                    elif pipe is process.stdout:
                        yield chunk
                    else:
                        self._stderr = (self._stderr + chunk)[-_STDERR_KEPT:]

    def wait(self) -> None:
        """The exit status within the deadline: AccountingFailed when it is not 0."""
        if self.timed_out:
            return
        try:
            returncode = self._process.wait(timeout=max(self._deadline - time.monotonic(), 0))
        except subprocess.TimeoutExpired:
            self.timed_out = True
            self._stop()
            return
        if returncode != 0:
            raise AccountingFailed(
                f"sacct failed with exit status {returncode}: {_last_line(self._stderr)}")

    def _stop(self) -> None:
        # Not waited for yet, so its id is still its own (a zombie at worst): the group
        # may hold children that keep the pipes open.
        if self._process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._process.pid, signal.SIGKILL)


def _sacct_time(moment: datetime) -> str:
    # sacct reads --starttime in the local zone of the machine it runs on (this one).
    return moment.astimezone().strftime("%Y-%m-%dT%H:%M:%S")


def _last_line(stderr: bytes) -> str:
    lines = [line.strip() for line in stderr.decode("utf-8", "replace").splitlines()]
    lines = [line for line in lines if line]
    if not lines:
        return "no message"
    return lines[-1][:_STDERR_QUOTE]

