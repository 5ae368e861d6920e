"""One real Slurm cluster with accounting and a set of finished and running jobs, shared by
the tests of the sacct adapter, the view command and the slurmdb source.

Started once per test session on first use (about 30 s: the cluster with MariaDB and
slurmdbd, then the jobs), stopped when the session ends. Jobs run as `cwjobtest` (account
`cwlab`); one runs as `cwjobother` (account `cwother`) so per-user selections are checked.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Optional

import pytest

from clusterwatch.loopback import slurm
from clusterwatch.loopback.slurm import SlurmCluster
from tests.support.slurm_prerequisites import require_slurm

USER = slurm.DEFAULT_JOB_USER
OTHER_USER, OTHER_ACCOUNT = "cwjobother", "cwother"
BURN_CPU_S = 4.0  # the burner's CPU time (user + system), whatever the machine's load
HELD_MIB = 150  # what the memory job holds, every page written
HOLD_S = 8  # longer than JobAcctGatherFrequency (5 s): at least one sample sees it
# A name with the separator sacct uses and letters outside ASCII. Latin-1 ones: slurmdbd made
# its tables in the server's default character set, latin1 under --no-defaults (Debian's
# configuration says utf8mb4), and stores a Greek letter as "?" there: sacct then prints "?".
ODD_NAME = "größe|µ"

BURNER = f"""\
exec python3 -c '
import time
while time.process_time() < {BURN_CPU_S}:
    pass
'
"""
HOLDER = f"""\
exec python3 -c '
import time
held = bytearray(b"\\x01") * ({HELD_MIB} << 20)
time.sleep({HOLD_S})
'
"""


@dataclass(frozen=True)
class RealJobs:
    cluster: SlurmCluster
    since: datetime  # a little before the first submission
    burner: str  # 1 CPU, 200M, burns BURN_CPU_S of CPU, exit 0
    holder: str  # 2 CPUs, 300M, holds HELD_MIB MiB for HOLD_S s, exit 0, named ODD_NAME
    failed: str  # exit 3
    killed: str  # its batch shell killed by SIGKILL
    cancelled: str  # scancel'd (by root) while running
    array: str  # the array job's id; tasks `<array>_1` and `<array>_2`
    other: str  # OTHER_USER's job, exit 0
    running: str  # sleeps, time limit a day: still running however long the suite takes

    @property
    def ended(self) -> tuple[str, ...]:
        return (self.burner, self.holder, self.failed, self.killed, self.cancelled,
                f"{self.array}_1", f"{self.array}_2", self.other)


_shared: Optional[RealJobs] = None


def real_jobs(config: pytest.Config) -> RealJobs:
    """The session's cluster and jobs, started now if this is the first test to ask."""
    global _shared
    if _shared is None:
        require_slurm(accounting=True)
        cluster = SlurmCluster(accounting=True)
        cluster.start()
        config.add_cleanup(cluster.stop)
        _shared = _run_jobs(cluster)
    return _shared


def _run_jobs(cluster: SlurmCluster) -> RealJobs:
    since = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(seconds=2)
    cluster.accounting.add_user(OTHER_USER, OTHER_ACCOUNT)
    submit = cluster.submit
    jobs = RealJobs(
        cluster=cluster,
        since=since,
        burner=str(submit(BURNER, mem="200M", job_name="burner")),
        holder=str(submit(HOLDER, mem="300M", cpus_per_task=2, job_name=ODD_NAME)),
        failed=str(submit("exit 3", mem="50M", job_name="failed")),
        killed=str(submit("kill -9 $$", mem="50M", job_name="killed")),
        cancelled=str(submit("sleep 300", mem="50M", job_name="cancelled")),
        array=str(submit("sleep 1", mem="50M", array="1-2", job_name="array")),
        other=str(submit("exit 0", mem="50M", user=OTHER_USER, job_name="other")),
        running=str(submit("sleep 86400", mem="50M", time="1-0", job_name="running")),
    )
    cluster.wait_running(int(jobs.cancelled))
    cluster.cancel(int(jobs.cancelled))
    for jobid in (jobs.burner, jobs.holder, jobs.failed, jobs.killed, jobs.cancelled,
                  jobs.other):
        cluster.wait_done(int(jobid))
    cluster.wait_running(int(jobs.running))
    for jobid in jobs.ended:
        cluster.accounting.wait_accounted(jobid)
    cluster.accounting.wait_accounted(jobs.running, ended=False)
    return jobs
