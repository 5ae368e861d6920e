"""`clusterwatch usage`: usage reports in a terminal, for the researchers on a login node.

This module only builds the parser; the report's modules load in the handler. Nothing here
or below imports Django (tests/monitor/usage/test_terminal_console.py runs the command where
Django cannot be imported), so it runs where the web stack is not installed.
"""

from __future__ import annotations

import argparse

_DESCRIPTION = """\
What your batch jobs used of what they asked for.

  clusterwatch usage 4242            one job: CPU, memory, GPUs and time, asked vs used,
                                     each node's part, the warnings and what to change
  clusterwatch usage 4242 4243 ...   several jobs, one report each
  clusterwatch usage 4300            an array's id: one summary of its tasks (states,
                                     efficiency percentiles, run-time and memory
                                     histograms, advice for the array); --tasks lists each
  clusterwatch usage                 a table of your jobs of the last 7 days
  clusterwatch usage --user NAME --days 30 --state FAILED,TIMEOUT

Figures come from the monitor when one is configured (--monitor URL, CLUSTERWATCH_MONITOR_URL
or monitor_url in /etc/clusterwatch/usage.toml): it keeps each ended job's figures, so its
reports outlive Prometheus' retention. It knows who you are from a usage token file
(~/.config/clusterwatch/usage-token, mode 600, or --token-file) or, on a Slurm cluster,
from a MUNGE credential. Without a monitor the figures are computed here from sacct and
Prometheus (CLUSTERWATCH_PROMETHEUS_URL, CLUSTERWATCH_SACCT, as for the monitor)."""

_EPILOG = """\
--json prints the monitor API's documents: GET /api/v1/jobs/<id>/usage for a job (a list
when several ids are given), /api/v1/arrays/<id>/usage for an array, /api/v1/users/<name>
for the table.
Exit status: 0 reported, 1 an unknown job or a failed source (one line each on stderr), 2
usage error, 78 configuration error."""


def register(parser: argparse.ArgumentParser) -> None:
    parser.description = _DESCRIPTION
    parser.epilog = _EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("jobids", nargs="*", metavar="JOBID",
                        help="job ids (1234, array task 1234_7, component 1234+1) or an "
                        "array's id; none: a table of the user's jobs")
    parser.add_argument("--json", action="store_true",
                        help="print the API's JSON documents instead of text")
    parser.add_argument("--tasks", action="store_true",
                        help="with an array's id: also a line per task")
    listing = parser.add_argument_group("the table of a user's jobs (no JOBID)")
    listing.add_argument("--user", metavar="NAME",
                         help="whose jobs (default: you); another's needs staff rights")
    period = listing.add_mutually_exclusive_group()
    period.add_argument("--days", type=int, metavar="N",
                        help="jobs of the last N days, 1-366 (default 7)")
    period.add_argument("--since", metavar="DATE",
                        help="jobs since DATE (YYYY-MM-DD or YYYY-MM-DDTHH:MM, UTC)")
    listing.add_argument("--state", metavar="S[,S...]",
                         help="only jobs in these states, e.g. FAILED,TIMEOUT,OUT_OF_MEMORY")
    listing.add_argument("--parsable", action="store_true",
                         help="`|`-separated fields with a header, for scripts")
    source = parser.add_argument_group("where the figures come from")
    source.add_argument("--monitor", metavar="URL",
                        help="ask this monitor (default: CLUSTERWATCH_MONITOR_URL, or the "
                        "system file); without one, compute here")
    source.add_argument("--token-file", metavar="FILE",
                        help="a usage token's file, mode 600 (default: "
                        "~/.config/clusterwatch/usage-token when it exists, else MUNGE)")
    parser.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                        help="colour the output: auto (on a terminal, unless NO_COLOR is "
                        "set), always, never")
    parser.set_defaults(handler=_handle)


def _handle(args: argparse.Namespace) -> int:
    from clusterwatch.monitor.usage.terminal.command import run

    return run(args)
