"""A stand-in for Slurm's `sacct`, for `clusterwatch monitor demo`, which runs no Slurm.

The demo writes `sacct` (a small shell script) and `sacct-jobs.json` (the demo jobs'
accounting lines, clusterwatch.demo.sacct_lines) into its data directory, and points the
monitor's CLUSTERWATCH_SACCT at the script, which runs this module. It answers what the
usage reports ask, as Slurm 22.05's sacct answers it:

    sacct --parsable2 --noheader [--delimiter=D] --format=FIELDS
          (--jobs ID[,ID] | --user U | --allusers) [--starttime TIME] [--endtime TIME]
          [--allocations]

Fields by name (any case; a `%N` width is ignored); times as SLURM_TIME_FORMAT says (`%s`:
epoch seconds; unset or `standard`: ISO local time). Without --jobs, jobs run between
--starttime (default: midnight today) and --endtime (default: now); without --user or
--allusers, those of the running user. Only the parsable outputs exist (--parsable2, or
--parsable with a trailing `|`). An unknown option, field or time is one line on stderr
and exit 1, as with sacct; it never invents a job.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import shlex
import sys
import time
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import IO, Optional

from clusterwatch.demo.sacct_lines import FIELDS, Line

DATA_VARIABLE = "CLUSTERWATCH_DEMO_SACCT_DATA"
DEFAULT_FORMAT = "JobID,JobName,Partition,Account,AllocCPUS,State,ExitCode"
TIME_FIELDS = frozenset({"Submit", "Start", "End"})
EXIT_ERROR = 1  # what sacct exits with for any error
_KNOWN = {name.lower(): name for name in FIELDS}


class StandinError(Exception):
    """Something sacct would refuse; the message is its one line."""


def install(directory: Path, jobs: Sequence[Sequence[Line]]) -> Path:
    """Writes the jobs' lines and the `sacct` script into `directory`; returns the script."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    data = directory / "sacct-jobs.json"
    data.write_text(json.dumps([list(job) for job in jobs], indent=1) + "\n", encoding="utf-8")
    program = directory / "sacct"
    program.write_text(
        "#!/bin/sh\n"
        "# clusterwatch monitor demo: a stand-in for Slurm's sacct (the demo has no Slurm).\n"
        f"# It prints the demo jobs' accounting lines from {data.name}.\n"
        f"export {DATA_VARIABLE}={shlex.quote(str(data))}\n"
        f"exec {shlex.quote(sys.executable)} -m clusterwatch.demo.sacct_standin \"$@\"\n",
        encoding="utf-8")
    program.chmod(0o700)
    return program


def main(argv: Optional[Sequence[str]] = None, environ: Optional[Mapping[str, str]] = None,
         out: Optional[IO[str]] = None, now: Optional[float] = None) -> int:
    environ = os.environ if environ is None else environ
    out = out or sys.stdout
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:  # argparse has said why; sacct exits 1 on a bad option
        return 0 if exc.code == 0 else EXIT_ERROR
    try:
        if not (args.parsable2 or args.parsable):
            raise StandinError("this stand-in writes only the parsable outputs: pass "
                               "--parsable2 (or --parsable)")
        jobs = _load(environ.get(DATA_VARIABLE, ""))
        fields = _fields(args.format or DEFAULT_FORMAT)
        lines = select(jobs, args, time.time() if now is None else now)
    except StandinError as exc:
        print(f"sacct: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    time_format = environ.get("SLURM_TIME_FORMAT", "") or "standard"
    delimiter = args.delimiter or "|"  # sacct's own default
    trailer = delimiter if args.parsable else ""
    if not args.noheader:
        out.write(delimiter.join(fields) + trailer + "\n")
    for line in lines:
        values = [_time(line.get(f, ""), time_format) if f in TIME_FIELDS else line.get(f, "")
                  for f in fields]
        out.write(delimiter.join(values) + trailer + "\n")
    return 0


def select(jobs: Sequence[Sequence[Line]], args: argparse.Namespace, now: float) -> list[Line]:
    """The lines sacct would print for this selection, in the data's order."""
    wanted = set(_split(args.jobs)) if args.jobs else None
    users = set(_split(args.user)) if args.user else None
    if users is None and not args.allusers and wanted is None:
        users = {getpass.getuser()}
    since = _moment(args.starttime, now) if args.starttime else None
    if since is None and wanted is None:
        since = datetime.fromtimestamp(now).replace(hour=0, minute=0, second=0).timestamp()
    until = _moment(args.endtime, now) if args.endtime else now
    chosen: list[Line] = []
    for job in jobs:
        head = job[0]
        if wanted is not None and not wanted & {head["JobID"], head["JobIDRaw"]}:
            continue
        if users is not None and not users & {head["User"], head.get("UID", "")}:
            continue
        end = float(head["End"]) if head["End"].isdigit() else None
        start = float(head["Start"]) if head["Start"].isdigit() else None
        if since is not None and end is not None and end < since:
            continue
        if start is not None and start > until:
            continue
        chosen.extend(job[:1] if args.allocations else job)
    return chosen


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sacct", description="clusterwatch monitor demo's "
                                     "stand-in for Slurm's sacct: the demo jobs' accounting.")
    parser.add_argument("-P", "--parsable2", action="store_true")
    parser.add_argument("-p", "--parsable", action="store_true")
    parser.add_argument("-n", "--noheader", action="store_true")
    parser.add_argument("-o", "--format")
    parser.add_argument("--delimiter")
    parser.add_argument("-j", "--jobs")
    parser.add_argument("-u", "--user")
    parser.add_argument("-a", "--allusers", action="store_true")
    parser.add_argument("-S", "--starttime")
    parser.add_argument("-E", "--endtime")
    parser.add_argument("-X", "--allocations", action="store_true")
    return parser


def _load(path: str) -> list[list[Line]]:
    if not path:
        raise StandinError(f"{DATA_VARIABLE} is not set: run this through the demo's sacct "
                           "script")
    try:
        jobs = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise StandinError(f"cannot read the demo's accounting data {path}: {exc}") from None
    if not isinstance(jobs, list) or not all(isinstance(job, list) and job for job in jobs):
        raise StandinError(f"the demo's accounting data {path} is not a list of jobs")
    return jobs


def _fields(text: str) -> list[str]:
    fields = []
    for item in _split(text):
        name = item.partition("%")[0]
        if name.lower() not in _KNOWN:
            raise StandinError(f'Invalid field requested: "{name[:40]}"')
        fields.append(_KNOWN[name.lower()])
    return fields


def _split(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def _moment(text: str, now: float) -> float:
    if text.lower() == "now":
        return now
    try:
        return datetime.fromisoformat(text).timestamp()  # no zone: local, as sacct reads it
    except ValueError:
        raise StandinError(f"invalid time specification: {text[:40]!r}") from None


def _time(value: str, time_format: str) -> str:
    if not value.isdigit():
        return value or "Unknown"
    moment = time.localtime(int(value))
    if time_format in ("standard", "relative"):
        return time.strftime("%Y-%m-%dT%H:%M:%S", moment)
    return time.strftime(time_format, moment)


if __name__ == "__main__":
    sys.exit(main())
