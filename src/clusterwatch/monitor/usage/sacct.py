"""Slurm's accounting through `sacct`: the Accounting protocol's Slurm implementation.

The program is a parameter (CLUSTERWATCH_SACCT, default `sacct` on PATH). It runs with
SLURM_TIME_FORMAT=%s so times come back as epoch seconds, free of the time zone question,
and within a timeout: a hung slurmdbd must not hold a page or the mail poller forever.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Optional

from clusterwatch.monitor.usage.accounting import (
    AccountingConfigError,
    AccountingFailed,
    JobRecord,
    UnknownJob,
    check_jobid,
)
from clusterwatch.monitor.usage.sacct_parse import FORMAT, find_job, parse_sacct

DEFAULT_TIMEOUT_S = 30.0
_STDERR_QUOTE = 200  # characters of sacct's last stderr line kept in the error
_DRAIN_S = 1.0  # after a timeout and the kill: what is left of the output, if it comes


class SacctAccounting:
    """Runs `program --parsable2 --noheader --format=...` with the selection of each call."""

    def __init__(self, program: str = "sacct", timeout_s: float = DEFAULT_TIMEOUT_S,
                 environ: Optional[Mapping[str, str]] = None) -> None:
        self.program = program
        self.timeout_s = timeout_s
        self._environ = dict(os.environ if environ is None else environ)

    def job(self, jobid: str) -> JobRecord:
        check_jobid(jobid)
        record = find_job(self._output(["--jobs", jobid]), jobid)
        if record is None:  # sacct says nothing, and exits 0, for a job it does not know
            raise UnknownJob(jobid)
        return record

    def jobs_of_user(self, user: str, since: datetime) -> list[JobRecord]:
        return parse_sacct(self._output(["--user", user, "--starttime", _sacct_time(since)]))

    def jobs_ended_since(self, since: datetime) -> list[JobRecord]:
        records = parse_sacct(self._output(["--allusers", "--starttime", _sacct_time(since)]))
        ended = [r for r in records if not r.running and r.end is not None and r.end >= since]
        return sorted(ended, key=lambda r: (r.end, r.jobid))

    def _output(self, selection: Sequence[str]) -> str:
        argv = [self.program, "--parsable2", "--noheader", f"--format={FORMAT}", *selection]
        environ = {**self._environ, "SLURM_TIME_FORMAT": "%s"}
        try:
            returncode, stdout, stderr = _run(argv, environ, self.timeout_s)
        except FileNotFoundError:
            raise AccountingConfigError(f"sacct program not found: {self.program}") from None
        except PermissionError:
            raise AccountingConfigError(
                f"sacct program not executable: {self.program}") from None
        except subprocess.TimeoutExpired:
            raise AccountingFailed(f"sacct gave no answer within {self.timeout_s:g} s") from None
        if returncode != 0:
            raise AccountingFailed(
                f"sacct failed with exit status {returncode}: {_last_line(stderr)}")
        if b"\0" in stdout:  # no Slurm string holds one, and PostgreSQL refuses it in text
            raise AccountingFailed("sacct wrote output with a NUL byte")
        try:
            return stdout.decode("utf-8")
        except UnicodeDecodeError:
            raise AccountingFailed("sacct wrote output that is not UTF-8") from None


def _run(argv: list[str], environ: dict[str, str], timeout_s: float) -> tuple[int, bytes, bytes]:
    # A session of its own, so a timeout ends the whole group: a wrapper script's children
    # would otherwise keep the pipes open and the wait going past the timeout.
    with subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env=environ,
                          start_new_session=True) as process:
        try:
            stdout, stderr = process.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            # A descendant that left the group (setsid) may hold the pipes open for as long
            # as it lives: stop reading soon; leaving the block closes our ends.
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.communicate(timeout=_DRAIN_S)
            raise
        return process.returncode, stdout, stderr


def _sacct_time(moment: datetime) -> str:
    # sacct reads --starttime in the local zone of the machine it runs on (this one).
    return moment.astimezone().strftime("%Y-%m-%dT%H:%M:%S")


def _last_line(stderr: bytes) -> str:
    lines = [line.strip() for line in stderr.decode("utf-8", "replace").splitlines()]
    lines = [line for line in lines if line]
    if not lines:
        return "no message"
    return lines[-1][:_STDERR_QUOTE]

