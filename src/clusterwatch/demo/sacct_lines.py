"""Planned jobs as Slurm 22.05's accounting would list them: one allocation line and the
`batch` and `extern` steps, field by field, with values written as `sacct --parsable2`
writes them (durations `[D-]HH:MM:SS`, CPU times under an hour `MM:SS.mmm`, sizes with a
binary unit letter, MaxRSS only on steps, times as epoch seconds).

Pure. The figures come from the same `JobHistory` as the exporter's series, so accounting
and Prometheus tell one story: TotalCPU is the job's CPU time to its very end, a little more
than the exporter's last scrape saw, and MaxRSS the high-water mark of its processes.
"""

from __future__ import annotations

import math

from clusterwatch.loopback.job_series import JobHistory

KiB = 1024
GiB = 1024**3
MiB = 1024**2
SUBMITTED_BEFORE_S = 95  # the job waited in the queue this long before it started
EXTERN_RSS_KIB = 1024  # the extern step holds only slurmstepd's sleep process

Line = dict[str, str]
# Every field a line has, as sacct names them.
FIELDS = ("JobID", "JobIDRaw", "JobName", "User", "UID", "Account", "Partition", "State",
          "Submit", "Start", "End", "Elapsed", "ElapsedRaw", "AllocCPUS", "NCPUS", "ReqMem",
          "ReqTRES", "AllocTRES", "NNodes", "NodeList", "MaxRSS", "TotalCPU", "UserCPU",
          "SystemCPU", "Timelimit", "ExitCode")


def job_lines(history: JobHistory) -> list[Line]:
    """The job's accounting lines, allocation first; keys are sacct's field names."""
    plan, totals = history.plan, history.totals
    memory = memory_text(plan.memory_requested_bytes)
    tres = f"cpu={plan.cpus},mem={memory},node=1"
    elapsed = round(plan.end - plan.start)
    limit_h = math.ceil(elapsed / 3600) + 1
    shared = {
        "State": "COMPLETED", "Submit": str(round(plan.start) - SUBMITTED_BEFORE_S),
        "Start": str(round(plan.start)), "End": str(round(plan.end)),
        "Elapsed": duration_text(elapsed), "ElapsedRaw": str(elapsed),
        "AllocCPUS": str(plan.cpus), "NCPUS": str(plan.cpus), "NNodes": "1",
        "NodeList": plan.node, "ExitCode": "0:0",
    }
    allocation = {
        **shared, "JobID": plan.jobid, "JobIDRaw": plan.jobid, "JobName": plan.name,
        "User": plan.user, "UID": str(plan.uid), "Account": plan.account,
        "Partition": plan.partition, "ReqMem": memory, "ReqTRES": f"billing={plan.cpus},{tres}",
        "AllocTRES": f"billing={plan.cpus},{tres}", "MaxRSS": "",
        "TotalCPU": cpu_time_text(totals.cpu_s), "UserCPU": cpu_time_text(totals.user_s),
        "SystemCPU": cpu_time_text(totals.system_s), "Timelimit": duration_text(limit_h * 3600),
    }
    batch = _step(plan.jobid, "batch", shared, tres, f"{math.ceil(totals.max_rss_bytes / KiB)}K")
    batch.update(TotalCPU=allocation["TotalCPU"], UserCPU=allocation["UserCPU"],
                 SystemCPU=allocation["SystemCPU"])
    extern = _step(plan.jobid, "extern", shared, tres, f"{EXTERN_RSS_KIB}K")
    return [allocation, batch, extern]


def _step(jobid: str, name: str, shared: Line, tres: str, max_rss: str) -> Line:
    # Steps carry no user, account, partition, memory request or time limit in sacct.
    return {**shared, "JobID": f"{jobid}.{name}", "JobIDRaw": f"{jobid}.{name}",
            "JobName": name, "User": "", "UID": "", "Account": "", "Partition": "",
            "ReqMem": "", "ReqTRES": tres, "AllocTRES": tres, "MaxRSS": max_rss,
            "TotalCPU": "00:00:00", "UserCPU": "00:00:00", "SystemCPU": "00:00:00",
            "Timelimit": ""}


def memory_text(size: int) -> str:
    """`8G`, `1500M`: a memory request as Slurm 21.08 and later print ReqMem (a total)."""
    if size % GiB == 0:
        return f"{size // GiB}G"
    return f"{math.ceil(size / MiB)}M"


def duration_text(seconds: float) -> str:
    """`02:00:00`, `1-04:00:00`: Elapsed and Timelimit."""
    days, rest = divmod(round(seconds), 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    clock = f"{hours:02d}:{minutes:02d}:{secs:02d}"
    return f"{days}-{clock}" if days else clock


def cpu_time_text(seconds: float) -> str:
    """TotalCPU, UserCPU, SystemCPU: `MM:SS.mmm` under an hour, else like Elapsed."""
    millis = round(seconds * 1000)
    if millis >= 3_600_000:
        return duration_text(millis // 1000)
    minutes, millis = divmod(millis, 60_000)
    return f"{minutes:02d}:{millis // 1000:02d}.{millis % 1000:03d}"
