"""The end-to-end test's three Slurm jobs: what each asks for, what it does, what it says it did.

Each job is one Python process doing the same kind of work (hold some memory with every page
written, keep one CPU busy for a while) under a different request, so each warning has one
clear cause:

- `one_of_two`: 2 CPUs, keeps one busy (pinned to it, so the other stays idle); 300 MiB asked,
  a few MiB used: CPU efficiency about 0.5, `low_cpu_efficiency` and `unbalanced_cores`;
- `big_request`: 1 CPU kept busy; 8 GiB asked, 200 MiB held: `memory_over_request`;
- `well_behaved`: 1 CPU kept busy; 300 MiB asked, 200 MiB held: no warning.

At its end each job writes what it did, measured by itself (getrusage: its CPU seconds and
peak resident memory), then sleeps two scrape intervals so the exporter's last scrape holds
its whole CPU time. The test compares the reports with these self-measurements, not with
constants: CPU time is what the shared machine gave the job.

A job waits, after it started, until the test has raised its scheduling priority (`release`):
this 2-core machine is shared with other work, which would otherwise take CPU from the
"well-behaved" job and make it look idle. The jobs run one after another (`afterany`
dependencies), so at most one busy loop holds a core at that priority.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from clusterwatch.loopback.slurm import SlurmCluster

MiB = 1024**2
GiB = 1024**3
BUSY_S = 25  # ~28 scrapes at 1 s; min_samples is 10
TAIL_S = 2  # two scrape intervals after the report: the last scrape has the whole CPU time
JOB_NICE = -20  # what `release` gives a job: the most favoured (root may lower a nice value)
RELEASE_TIMEOUT_S = 150.0  # the third job starts after the first two have run

# argv: busy seconds, bytes to hold, 1 to pin to one CPU, tail seconds.
PROGRAM = """\
exec python3 - "$@" <<'EOF'
import json, os, resource, sys, time
busy_s, hold, pin, tail = (int(a) for a in sys.argv[1:5])
jobid = os.environ["SLURM_JOB_ID"]
open("started-" + jobid, "w").close()
deadline = time.monotonic() + 60
while not os.path.exists("go-" + jobid) and time.monotonic() < deadline:
    time.sleep(0.02)
if pin:
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
held = bytearray(b"\\x01") * hold
end = time.monotonic() + busy_s
while time.monotonic() < end:
    pass
usage = resource.getrusage(resource.RUSAGE_SELF)
report = {"cpu_s": usage.ru_utime + usage.ru_stime, "maxrss_bytes": usage.ru_maxrss * 1024}
with open("did-" + jobid + ".json", "w") as out:
    json.dump(report, out)
time.sleep(tail)
EOF
"""


@dataclass(frozen=True)
class Plan:
    name: str
    cpus: int
    mem: str  # sbatch --mem
    requested_bytes: int
    hold_bytes: int
    pin: bool
    warnings: frozenset[str]  # what the reports must say about it

    def script(self) -> str:
        arguments = f"{BUSY_S} {self.hold_bytes} {int(self.pin)} {TAIL_S}"
        return "#!/bin/bash\nset -- " + arguments + "\n" + PROGRAM


PLANS = (
    Plan("one_of_two", cpus=2, mem="300M", requested_bytes=300 * MiB, hold_bytes=0, pin=True,
         warnings=frozenset({"low_cpu_efficiency", "unbalanced_cores"})),
    Plan("big_request", cpus=1, mem="8G", requested_bytes=8 * GiB, hold_bytes=200 * MiB,
         pin=False, warnings=frozenset({"memory_over_request"})),
    Plan("well_behaved", cpus=1, mem="300M", requested_bytes=300 * MiB,
         hold_bytes=200 * MiB, pin=False, warnings=frozenset()),
)


@dataclass(frozen=True)
class Did:
    """What a job measured of itself."""

    cpu_s: float
    maxrss_bytes: int


@dataclass(frozen=True)
class RanJob:
    plan: Plan
    jobid: str
    did: Did


def submit_in_turn(cluster: SlurmCluster) -> list[tuple[Plan, int]]:
    """Every plan submitted at once, each to start after the previous one has ended."""
    submitted: list[tuple[Plan, int]] = []
    for plan in PLANS:
        after = {"dependency": f"afterany:{submitted[-1][1]}"} if submitted else {}
        submitted.append((plan, cluster.submit(plan.script(), cpus_per_task=plan.cpus,
                                               mem=plan.mem, job_name=plan.name, **after)))
    return submitted


def release(cluster: SlurmCluster, jobid: int) -> None:
    """Once the job has started: its processes get JOB_NICE, then it may begin its work."""
    started = cluster.jobs_dir / f"started-{jobid}"
    deadline = time.monotonic() + RELEASE_TIMEOUT_S
    while not started.exists():
        if time.monotonic() > deadline or cluster.job_state(jobid) not in ("PENDING",
                                                                             "RUNNING"):
            raise AssertionError(f"job {jobid} did not start its work "
                                 f"({cluster.job_state(jobid)}):\n{cluster.job_output(jobid)}")
        time.sleep(0.05)
    for pid in task_pids(cluster, jobid):
        favour(pid)
    (cluster.jobs_dir / f"go-{jobid}").touch(mode=0o644)


def favour(pid: int) -> None:
    """JOB_NICE for the process, and for its autogroup: with autogroups on (Debian's default)
    the kernel shares the CPU between sessions first, and a job is a session of its own, so
    its processes' nice value alone would only weigh them against each other."""
    with contextlib.suppress(ProcessLookupError):  # bash, replaced by python3 a moment ago
        os.setpriority(os.PRIO_PROCESS, pid, JOB_NICE)
    with contextlib.suppress(FileNotFoundError, ProcessLookupError):  # a kernel without them
        Path(f"/proc/{pid}/autogroup").write_text(str(JOB_NICE), encoding="ascii")


def task_pids(cluster: SlurmCluster, jobid: int) -> set[int]:
    """The job's own processes (slurmstepd is not in the cpuacct task cgroups)."""
    return {int(pid) for procs in cluster.job_cgroup(jobid, "cpuacct").glob(
        "step_*/task_*/cgroup.procs") for pid in procs.read_text().split()}


def what_it_did(cluster: SlurmCluster, jobid: int) -> Did:
    path: Path = cluster.jobs_dir / f"did-{jobid}.json"
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except OSError:
        raise AssertionError(f"job {jobid} wrote no report:\n"
                             f"{cluster.job_output(jobid)}") from None
    return Did(cpu_s=float(found["cpu_s"]), maxrss_bytes=int(found["maxrss_bytes"]))
