"""The demo researcher's four finished jobs, each telling one story of the usage reports.

- align-reads: 2 CPUs and 2 GiB asked for, one busy thread: low_cpu_efficiency and
  unbalanced_cores;
- make-figures: 1 CPU and 8 GiB asked for, 200 MB used: memory_over_request;
- lattice-sim: 4 CPUs busy, 11 GiB of 16 GiB: no warning;
- fit-models: 8 CPUs, no GPU, 6-minute bursts every 20 minutes: bursty_cpu and
  low_cpu_efficiency.

They ended a few hours before `now`, so their figures are final and their series still
within Prometheus' retention. Pure: `now` is a parameter.
"""

from __future__ import annotations

from collections.abc import Mapping

from clusterwatch.loopback.job_series import Burst, JobPlan, Usage

RESEARCHER = "alice"
RESEARCHER_UID = 1001
ACCOUNT = "physics"
PARTITION = "cpu"
FIRST_JOBID = 81201
HOUR = 3600.0
GiB = 1024**3
MiB = 1024**2

# The warning codes each job's report must carry (checked by `--check`); an empty set: none.
EXPECTED_WARNINGS: Mapping[str, frozenset[str]] = {
    "align-reads": frozenset({"low_cpu_efficiency", "unbalanced_cores"}),
    "make-figures": frozenset({"memory_over_request"}),
    "lattice-sim": frozenset(),
    "fit-models": frozenset({"bursty_cpu", "low_cpu_efficiency"}),
}


def plans(now: float) -> list[JobPlan]:
    """The four jobs, oldest first; job ids FIRST_JOBID.. in that order."""
    base = round(now)

    def job(offset: int, name: str, node: str, first_core: int, started_h: float,
            hours: float, memory: int, usage: Usage) -> JobPlan:
        start = base - round(started_h * HOUR)
        return JobPlan(jobid=str(FIRST_JOBID + offset), name=name, user=RESEARCHER,
                       uid=RESEARCHER_UID, account=ACCOUNT, partition=PARTITION, node=node,
                       start=start, end=start + round(hours * HOUR),
                       memory_requested_bytes=memory, usage=usage, first_core=first_core)

    return [
        job(0, "lattice-sim", "node03", 8, 7.0, 3.0, 16 * GiB, Usage(
            core_busy=(0.95, 0.94, 0.95, 0.93), rss_bytes=11 * GiB, cache_bytes=2 * GiB,
            threads=4, open_files=38, read_bytes_per_s=2 * MiB, write_bytes_per_s=1.5 * MiB,
            shmem_bytes=256 * MiB, ramp_s=900)),
        job(1, "fit-models", "node05", 0, 6.0, 2.5, 16 * GiB, Usage(
            core_busy=(0.97,) * 8, rss_bytes=9 * GiB, cache_bytes=3 * GiB, threads=8,
            open_files=24, read_bytes_per_s=6 * MiB, write_bytes_per_s=0.5 * MiB,
            burst=Burst(period_s=1200, busy_s=360, quiet_busy=0.05, quiet_memory=0.25))),
        job(2, "align-reads", "node07", 4, 5.0, 2.0, 2 * GiB, Usage(
            core_busy=(0.97, 0.02), rss_bytes=1400 * MiB, cache_bytes=512 * MiB, threads=1,
            open_files=9, read_bytes_per_s=4 * MiB, write_bytes_per_s=1 * MiB)),
        job(3, "make-figures", "node07", 6, 4.3, 0.8, 8 * GiB, Usage(
            core_busy=(0.92,), rss_bytes=200 * 1000**2, cache_bytes=300 * MiB, threads=1,
            open_files=14, read_bytes_per_s=0.2 * MiB, write_bytes_per_s=0.1 * MiB)),
    ]
