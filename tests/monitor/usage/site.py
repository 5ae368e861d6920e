"""A usage-reports site for the web tests: a fake `sacct` program and a loopback Prometheus.

`UsageSite.job(...)` records a job as sacct prints it (the allocation line and a batch step
with its MaxRSS) and, optionally, the exporter's series of it in the loopback Prometheus.
The fake sacct answers `--jobs ID`, `--user U` and `--allusers` from those lines, as the real
one does with SLURM_TIME_FORMAT=%s; `fail(...)` makes it exit non-zero. Real Slurm is used by
the end-to-end and accounting tests; the pages, API and email tests need many jobs fast.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Optional

from clusterwatch.monitor.usage.accounting.sacct_parse import FIELDS
from tests.monitor.usage.prometheus_range import RangePrometheus
from tests.monitor.usage.sacct_support import step_values, values

GiB = 1024**3
_SACCT = """\
import json, sys
from pathlib import Path
book = json.loads(Path({book!r}).read_text())
if book.get("fail"):
    sys.stderr.write(book["fail"] + "\\n"); sys.exit(1)
args = sys.argv[1:]
def after(flag):
    return args[args.index(flag) + 1] if flag in args else None
jobid, user = after("--jobs"), after("--user")
delimiter = next((a.split("=", 1)[1] for a in args if a.startswith("--delimiter=")), "|")
for job in book["jobs"]:
    parent = job["jobid"].split("_")[0].split("+")[0]
    if jobid is not None and jobid not in (job["jobid"], parent, job.get("raw")):
        continue
    if user is not None and job["user"] != user:
        continue
    for values in job["lines"]:  # joined here, so no name can hold the delimiter
        sys.stdout.buffer.write((delimiter.join(values) + "\\n")
                                .encode("utf-8", "surrogateescape"))
"""


class UsageSite:
    def __init__(self, directory: Path, prometheus: RangePrometheus) -> None:
        self.prometheus = prometheus
        self._book = directory / "sacct-book.json"
        self._jobs: list[dict[str, object]] = []
        self._fail = ""
        self.sacct = directory / "sacct"
        self.sacct.write_text(f"#!{sys.executable}\n" + _SACCT.format(book=str(self._book)))
        self.sacct.chmod(0o755)
        self._save()

    def job(self, jobid: str, *, user: str = "alice", account: str = "physics",
            state: str = "COMPLETED", start: Optional[datetime] = None,
            hours: float = 1.0, cpus: int = 2, req_mem: str = "8G", max_rss: str = "204800K",
            total_cpu: str = "01:00:00", user_cpu: str = "59:00", system_cpu: str = "01:00",
            name: str = "analysis", running: bool = False,
            raw_id: Optional[str] = None) -> tuple[datetime, datetime]:
        """Record a job; returns its (start, end). `raw_id`: an array task's own job id
        (JobIDRaw, 130 for task 123_4), found by `sacct -j 130` as the real one does."""
        start = start or datetime.now(timezone.utc).replace(microsecond=0) - timedelta(days=1)
        end = start + timedelta(hours=hours)
        elapsed = int(hours * 3600)
        fields = dict(
            JobID=jobid, JobIDRaw=raw_id or jobid, User=user, Account=account, State=state,
            Start=str(int(start.timestamp())),
            End="Unknown" if running else str(int(end.timestamp())),
            Elapsed=f"{elapsed // 3600:02d}:{elapsed % 3600 // 60:02d}:{elapsed % 60:02d}",
            AllocCPUS=str(cpus), ReqMem=req_mem,
            ReqTRES=f"billing={cpus},cpu={cpus},mem={req_mem},node=1",
            AllocTRES=f"billing={cpus},cpu={cpus},mem={req_mem},node=1",
            TotalCPU=total_cpu, UserCPU=user_cpu, SystemCPU=system_cpu, JobName=name)
        lines = [values(**fields)]
        if not running:
            lines.append(step_values(
                f"{jobid}.batch", max_rss, State=state, Start=fields["Start"],
                End=fields["End"], Elapsed=fields["Elapsed"], AllocCPUS=str(cpus),
                TotalCPU=total_cpu, UserCPU=user_cpu, SystemCPU=system_cpu, JobName="batch"))
        self._jobs.append({"jobid": jobid, "raw": raw_id or jobid, "user": user,
                           "lines": lines})
        self._save()
        return start, end

    def series(self, jobid: str, metric: str, scrapes: Sequence[tuple[float, float]],
               **labels: str) -> None:
        self.prometheus.add(metric, {"jobid": jobid, "instance": "node01", **labels}, scrapes)

    def measured(self, jobid: str, start: datetime, end: datetime, *, busy_cpus: float,
                 memory_bytes: float, cpus: int = 2, step_s: float = 30.0) -> None:
        """The exporter's main series of a job that kept `busy_cpus` busy and held
        `memory_bytes` of anonymous memory all along, scraped every `step_s`."""
        t0, t1 = start.timestamp(), end.timestamp()
        times = [t0 + i * step_s for i in range(int((t1 - t0) // step_s) + 1)]

        def along(value: object) -> list[tuple[float, float]]:
            return [(t, float(value(t - t0) if callable(value) else value))  # type: ignore[arg-type]
                    for t in times]

        self.series(jobid, "jobs_info", along(1))
        self.series(jobid, "jobs_cpu_seconds_total", along(lambda s: busy_cpus * s))
        self.series(jobid, "jobs_cpu_user_seconds_total", along(lambda s: 0.95 * busy_cpus * s))
        self.series(jobid, "jobs_cpu_system_seconds_total", along(lambda s: 0.05 * busy_cpus * s))
        self.series(jobid, "jobs_memory_rss_bytes", along(memory_bytes))
        self.series(jobid, "jobs_memory_shmem_bytes", along(0))
        self.series(jobid, "jobs_memory_cache_bytes", along(64 * 1024**2))
        self.series(jobid, "jobs_memory_usage_bytes", along(memory_bytes + 64 * 1024**2))
        self.series(jobid, "jobs_threads", along(cpus + 1))
        self.series(jobid, "jobs_open_files", along(12))

    def change(self, jobid: str, **fields: str) -> None:
        """Replace `fields` of the job's allocation line, as a broken sacct prints it."""
        for job in self._jobs:
            if job["jobid"] == jobid:
                first = job["lines"][0]  # type: ignore[index]
                for name, value in fields.items():
                    first[FIELDS.index(name)] = value
        self._save()

    def fail(self, message: str) -> None:
        self._fail = message
        self._save()

    def _save(self) -> None:
        self._book.write_text(json.dumps({"jobs": self._jobs, "fail": self._fail}))


def environment(site: UsageSite) -> Mapping[str, str]:
    return {"CLUSTERWATCH_PROMETHEUS_URL": site.prometheus.url,
            "CLUSTERWATCH_SACCT": str(site.sacct)}
