"""What `clusterwatch usage` does with its arguments: pick the source, ask it, print.

Reports go to stdout as each job is read (a list of ids shows progress); an unknown job or
a job the source fails for is one line on stderr (without control characters: the source's
words may be anyone's) and the others are still reported; the exit
status says whether all were (0) or not (1). A source that is down fails every job alike, so
the first such failure ends the run.
"""

from __future__ import annotations

import argparse
import getpass
import json
import sys
from datetime import datetime, timedelta, timezone
from typing import Optional, TextIO

from clusterwatch.errors import EXIT_FAILURE, EXIT_OK, UsageError
from clusterwatch.monitor.usage.accounting.interface import (
    RUNNING_STATES,
    InvalidJobId,
    UnknownJob,
    check_jobid,
)
from clusterwatch.monitor.usage.rendering.shown_text import one_line
from clusterwatch.monitor.usage.terminal.job_text import job_report
from clusterwatch.monitor.usage.terminal.settings import read_settings
from clusterwatch.monitor.usage.terminal.sources import (
    LocalSource,
    MonitorSource,
    Source,
    SourceError,
)
from clusterwatch.monitor.usage.terminal.style import Style, choose_style
from clusterwatch.monitor.usage.terminal.tables import array_report, job_table

DEFAULT_DAYS = 7
MAX_DAYS = 366  # the monitor's own bound on a user's list
# Slurm's job states (sacct --state), for a clear refusal of a typo in --state.
STATES = frozenset({"BOOT_FAIL", "CANCELLED", "COMPLETED", "DEADLINE", "FAILED", "NODE_FAIL",
                    "OUT_OF_MEMORY", "PREEMPTED", "REVOKED", "TIMEOUT"} | RUNNING_STATES)


def run(args: argparse.Namespace, *, stdout: Optional[TextIO] = None,
        stderr: Optional[TextIO] = None, now: Optional[datetime] = None) -> int:
    stdout, stderr = stdout or sys.stdout, stderr or sys.stderr
    now = now or datetime.now(timezone.utc)
    _check_arguments(args)
    states = _states(args.state)
    since = _since(args, now)
    settings = read_settings(monitor_url=args.monitor, token_file=args.token_file)
    source: Source
    if settings.monitor is not None:
        source = MonitorSource(settings.monitor, now=now)
    else:
        assert settings.local is not None  # read_settings refuses neither
        source = LocalSource(settings.local, now=now)
    style = choose_style(stdout, args.color)
    if args.jobids:
        return _report_jobs(args, source, style, stdout, stderr)
    user = args.user or getpass.getuser()
    found = source.user_jobs(user, since)
    documents = [d for d in found.documents if states is None or d.get("state") in states]
    for reason in found.unreadable:
        print(f"clusterwatch: left out: {one_line(reason, 300)}", file=stderr)
    if found.cut:
        print(f"clusterwatch: only the newest {len(found.documents)} jobs of the period",
              file=stderr)
    if args.json:
        since_text = since.isoformat().replace("+00:00", "Z")
        print(json.dumps({"user": user, "since": since_text, "jobs": documents}, indent=1),
              file=stdout)
    elif not documents:
        print(f"No jobs of {user} since {since:%Y-%m-%d %H:%M} UTC"
              + (f" in state {', '.join(sorted(states))}." if states else "."), file=stdout)
    else:
        _lines(job_table(documents, style, parsable=args.parsable), stdout)
    return EXIT_OK


def _report_jobs(args: argparse.Namespace, source: Source, style: Style, stdout: TextIO,
                 stderr: TextIO) -> int:
    status, answers, shown = EXIT_OK, [], 0
    for jobid in args.jobids:
        try:
            document = source.job(jobid)
            # An array's id names one of its tasks (the one that kept the array's number).
            array = (source.array(jobid)
                     if jobid.isdigit() and str(document["jobid"]).startswith(f"{jobid}_")
                     else None)
        except UnknownJob as exc:
            print(f"clusterwatch: {one_line(str(exc), 500)}", file=stderr)
            status = EXIT_FAILURE
            continue
        except SourceError as exc:
            print(f"clusterwatch: job {jobid}: {one_line(str(exc), 500)}", file=stderr)
            return EXIT_FAILURE
        answer = document if array is None else array
        if args.json:
            answers.append(answer)
            continue
        if shown:
            print(file=stdout)
        shown += 1
        if array is None:
            _lines(job_report(document, style, report_url=source.report_url(jobid)), stdout)
        else:
            _lines(array_report(array, style), stdout)
            if args.tasks:
                _lines(["", *job_table(array["tasks"], style)], stdout)
        stdout.flush()  # each report as it is read
    if args.json and answers:
        print(json.dumps(answers[0] if len(args.jobids) == 1 else answers, indent=1),
              file=stdout)
    return status


def _check_arguments(args: argparse.Namespace) -> None:
    if args.jobids:
        listing = [name for name, value in (("--user", args.user), ("--days", args.days),
                                            ("--since", args.since), ("--state", args.state),
                                            ("--parsable", args.parsable)) if value]
        if listing:
            raise UsageError(f"{listing[0]} is for the table of a user's jobs, not with JOBID")
        for jobid in args.jobids:
            try:
                check_jobid(jobid)
            except InvalidJobId as exc:
                raise UsageError(str(exc)) from None
    elif args.tasks:
        raise UsageError("--tasks is for an array's id: give it as JOBID")
    if args.user is not None and not _plain_name(args.user):
        raise UsageError(f"not a user name: {args.user[:40]!r}")
    if args.days is not None and not 1 <= args.days <= MAX_DAYS:
        raise UsageError(f"--days must be 1 to {MAX_DAYS}, not {args.days}")


def _plain_name(name: str) -> bool:
    return 0 < len(name) <= 64 and name.isprintable() and not any(c in name for c in "/ ,")


def _states(text: Optional[str]) -> Optional[frozenset[str]]:
    if text is None:
        return None
    states = frozenset(s.strip().upper() for s in text.split(",") if s.strip())
    unknown = sorted(states - STATES)
    if not states or unknown:
        raise UsageError(f"--state: not a Slurm job state: {(unknown or [text])[0][:40]!r} "
                         f"(e.g. COMPLETED, FAILED, TIMEOUT, OUT_OF_MEMORY, RUNNING)")
    return states


def _since(args: argparse.Namespace, now: datetime) -> datetime:
    if args.since is None:
        return now - timedelta(days=args.days or DEFAULT_DAYS)
    try:
        moment = datetime.fromisoformat(args.since)
    except ValueError:
        raise UsageError(f"--since: not a date: {args.since[:40]!r} (YYYY-MM-DD or "
                         "YYYY-MM-DDTHH:MM)") from None
    moment = moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)
    if moment > now:
        raise UsageError(f"--since: {args.since[:40]} is in the future")
    if now - moment > timedelta(days=MAX_DAYS):
        raise UsageError(f"--since: at most {MAX_DAYS} days back")
    return moment


def _lines(lines: list[str], stream: TextIO) -> None:
    stream.write("".join(f"{line}\n" for line in lines))
