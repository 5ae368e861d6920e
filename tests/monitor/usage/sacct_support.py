# ruff: noqa: E501  (captured sacct lines are kept whole, as sacct prints them)
"""sacct output written from the documented --parsable2 format, for the accounting tests.

Fields are joined with SEP, a separator none of the tests' names holds, as SacctAccounting's
random --delimiter is one no name holds: parse the text with `parse_sacct(text, SEP)`, and
let a fake sacct put the delimiter it was asked for in SEP's place (with_delimiter).
"""

from __future__ import annotations

import sys
from pathlib import Path

from clusterwatch.monitor.usage.accounting.sacct_parse import FIELDS

# A finished two-CPU job with its batch and extern steps, as Slurm 22.05 prints it with
# SLURM_TIME_FORMAT=%s (JobID|JobIDRaw|User|Account|Partition|State|Start|End|Elapsed|
# AllocCPUS|ReqMem|ReqTRES|AllocTRES|NNodes|NodeList|MaxRSS|TotalCPU|UserCPU|SystemCPU|
# Timelimit|ExitCode|JobName).
_COMPLETED_JOB = """\
4242|4242|alice|physics|cpu|COMPLETED|1700000000|1700003600|01:00:00|2|8G|billing=2,cpu=2,mem=8G,node=1|billing=2,cpu=2,mem=8G,node=1|1|node01||01:00:00|59:00.500|01:00.250|02:00:00|0:0|analysis|step 1
4242.batch|4242.batch||||COMPLETED|1700000000|1700003600|01:00:00|2||cpu=2,mem=8G,node=1|cpu=2,mem=8G,node=1|1|node01|204800K|01:00:00|59:00.500|01:00.250||0:0|batch
4242.extern|4242.extern||||COMPLETED|1700000000|1700003600|01:00:00|2||billing=2,cpu=2,mem=8G,node=1|billing=2,cpu=2,mem=8G,node=1|1|node01|1024K|00:00:00|00:00:00|00:00:00||0:0|extern
"""

SEP = "<|sep|>"
COMPLETED_JOB = "".join(SEP.join(text.split("|", len(FIELDS) - 1)) + "\n"
                        for text in _COMPLETED_JOB.splitlines())
DEFAULTS = dict(zip(FIELDS, COMPLETED_JOB.splitlines()[0].split(SEP)))


def values(**fields: str) -> list[str]:
    """One output line's values: the completed job's allocation line, `fields` replaced."""
    unknown = set(fields) - set(FIELDS)
    assert not unknown, f"not sacct fields: {unknown}"
    return [{**DEFAULTS, **fields}[name] for name in FIELDS]


def line(**fields: str) -> str:
    """One output line: the completed job's allocation line with `fields` replaced."""
    return SEP.join(values(**fields))


def step_values(jobid: str, max_rss: str, **fields: str) -> list[str]:
    """A step line's values (e.g. of `4242.0`): no user, account or partition."""
    return values(**{"JobID": jobid, "JobIDRaw": jobid, "User": "", "Account": "",
                     "Partition": "", "MaxRSS": max_rss, **fields})


def step(jobid: str, max_rss: str, **fields: str) -> str:
    """A step line of `jobid` (e.g. `4242.0`): no user, account or partition."""
    return SEP.join(step_values(jobid, max_rss, **fields))


def with_delimiter(path: str) -> str:
    """What a fake sacct (sh) runs to print `path`'s text with the --delimiter it was given
    (the default `|` without one)."""
    return ('d="|"; for a; do case "$a" in --delimiter=*) d="${a#--delimiter=}";; esac; done\n'
            f'exec sed "s#<|sep|>#$d#g" {path}')



def history_sacct(path: Path, jobs: int, user: str = "alice") -> None:
    """A sacct that streams `jobs` finished jobs of `user` (an allocation and a batch line
    each, one a minute from 2023-11-14), whatever it is asked, with the delimiter asked for."""
    times = {"Start": "{start}", "End": "{end}"}
    head = line(JobID="{jobid}", JobIDRaw="{jobid}", User=user, JobName="run-{jobid}",
                **times) + "\n"
    batch = step("{jobid}.batch", "204800K", JobName="batch", **times) + "\n"
    path.write_text(
        f"#!{sys.executable}\n"
        "import sys\n"
        "d = next((a.split('=', 1)[1] for a in sys.argv if a.startswith('--delimiter=')), '|')\n"
        f"head, batch = {head!r}.replace({SEP!r}, d), {batch!r}.replace({SEP!r}, d)\n"
        f"for n in range({jobs}):\n"
        "    start = 1700000000 + n * 60\n"
        "    sys.stdout.write(head.format(jobid=100000 + n, start=start, end=start + 3600))\n"
        "    sys.stdout.write(batch.format(jobid=100000 + n, start=start, end=start + 3600))\n")
    path.chmod(0o755)
