# ruff: noqa: E501  (captured sacct lines are kept whole, as sacct prints them)
"""sacct output written from the documented --parsable2 format, for the accounting tests."""

from __future__ import annotations

from clusterwatch.monitor.usage.sacct_parse import FIELDS

# A finished two-CPU job with its batch and extern steps, as Slurm 22.05 prints it with
# SLURM_TIME_FORMAT=%s (JobID|JobIDRaw|User|Account|Partition|State|Start|End|Elapsed|
# AllocCPUS|ReqMem|ReqTRES|AllocTRES|NNodes|NodeList|MaxRSS|TotalCPU|UserCPU|SystemCPU|
# Timelimit|ExitCode|JobName).
COMPLETED_JOB = """\
4242|4242|alice|physics|cpu|COMPLETED|1700000000|1700003600|01:00:00|2|8G|billing=2,cpu=2,mem=8G,node=1|billing=2,cpu=2,mem=8G,node=1|1|node01||01:00:00|59:00.500|01:00.250|02:00:00|0:0|analysis|step 1
4242.batch|4242.batch||||COMPLETED|1700000000|1700003600|01:00:00|2||cpu=2,mem=8G,node=1|cpu=2,mem=8G,node=1|1|node01|204800K|01:00:00|59:00.500|01:00.250||0:0|batch
4242.extern|4242.extern||||COMPLETED|1700000000|1700003600|01:00:00|2||billing=2,cpu=2,mem=8G,node=1|billing=2,cpu=2,mem=8G,node=1|1|node01|1024K|00:00:00|00:00:00|00:00:00||0:0|extern
"""

DEFAULTS = dict(zip(FIELDS, COMPLETED_JOB.splitlines()[0].split("|", len(FIELDS) - 1)))


def line(**fields: str) -> str:
    """One output line: the completed job's allocation line with `fields` replaced."""
    unknown = set(fields) - set(FIELDS)
    assert not unknown, f"not sacct fields: {unknown}"
    return "|".join({**DEFAULTS, **fields}[name] for name in FIELDS)


def step(jobid: str, max_rss: str, **fields: str) -> str:
    """A step line of `jobid` (e.g. `4242.0`): no user, account or partition."""
    return line(JobID=jobid, JobIDRaw=jobid, User="", Account="", Partition="",
                MaxRSS=max_rss, **fields)
