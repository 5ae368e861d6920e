"""The job exporter on a real single-node Slurm cluster (cgroup v1), then through Prometheus.

The session's cluster (tests/integration/conftest.py: `slurm_cluster`) and three jobs for
the module, cancelled at its end, run as the unprivileged user `cwjobtest`:
- burner: one process that holds 200 MiB (every page written) and spins on one CPU;
- writer: writes 16 MiB into the scratch directory, fsyncs, keeps the file open, sleeps;
- stepper: a batch script running three `srun` steps at once.
The exporter reads the machine's real /sys/fs/cgroup and /proc: Slurm puts the jobs under
`<controller>/slurm_<node>/uid_<uid>/job_<id>/`. Other clusters may run on this machine at
the same time, so every assertion selects the jobs by ID.
"""

from __future__ import annotations

import os
import pwd
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from clusterwatch.jobs.exporter import JobsCollector
from clusterwatch.loopback.services import free_port, prometheus, vector_rows, wait_for_query
from clusterwatch.loopback.slurm import DEFAULT_JOB_USER, SlurmCluster
from tests.components import need_binary

pytestmark = pytest.mark.integration

USER = DEFAULT_JOB_USER
HELD_BYTES = 200 << 20
WRITTEN_BYTES = 16 << 20
STEPS = 3

BURNER = f"""\
exec python3 - <<'EOF'
import os
held = bytearray(b"\\x01") * {HELD_BYTES}  # filled, so every page is resident
open("ready-" + os.environ["SLURM_JOB_ID"], "w").close()
while True:
    pass
EOF
"""
WRITER = """\
exec python3 - {scratch} <<'EOF'
import os, sys, time
out = open(os.path.join(sys.argv[1], "out-" + os.environ["SLURM_JOB_ID"]), "wb")
for _ in range({chunks}):
    out.write(b"x" * (1 << 20))
out.flush()
os.fsync(out.fileno())
open("ready-" + os.environ["SLURM_JOB_ID"], "w").close()
time.sleep(3600)  # the file stays open
EOF
"""
# --overlap: the steps share the job's one CPU, so all of them run at once.
STEPPER = f"""\
for i in $(seq {STEPS}); do srun --overlap -n1 --mem=50M sleep 3600 & done
wait
"""


@pytest.fixture(scope="module")
def cluster(slurm_cluster: SlurmCluster) -> SlurmCluster:
    """The session's cluster; this module also needs Prometheus (its last test scrapes the
    exporter through it): without it the module fails under CI=true and is skipped elsewhere."""
    need_binary("prometheus")
    return slurm_cluster


@dataclass(frozen=True)
class Jobs:
    burner: int
    writer: int
    stepper: int
    scratch: Path

    @property
    def ids(self) -> tuple[int, int, int]:
        return (self.burner, self.writer, self.stepper)


@pytest.fixture(scope="module")
def jobs(cluster: SlurmCluster) -> Iterator[Jobs]:
    scratch = cluster.jobs_dir / "scratch"
    scratch.mkdir()
    account = pwd.getpwnam(USER)
    os.chown(scratch, account.pw_uid, account.pw_gid)
    started = Jobs(
        burner=cluster.submit(BURNER, mem="1G", job_name="burner"),
        writer=cluster.submit(WRITER.format(scratch=scratch, chunks=WRITTEN_BYTES >> 20),
                              mem="256M", job_name="writer"),
        stepper=cluster.submit(STEPPER, mem="300M", job_name="stepper"),
        scratch=scratch,
    )
    for jobid in started.ids:
        cluster.wait_running(jobid)
    cluster.wait_steps(started.stepper, STEPS)
    for jobid in (started.burner, started.writer):
        wait_for_file(cluster, jobid, cluster.jobs_dir / f"ready-{jobid}")
    yield started
    # The cluster is the session's: the module's jobs end with the module, not the run.
    for jobid in started.ids:
        cluster.cancel(jobid)
    for jobid in started.ids:
        cluster.wait_done(jobid)


def wait_for_file(cluster: SlurmCluster, jobid: int, path: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if cluster.job_state(jobid) != "RUNNING" or time.monotonic() > deadline:
            pytest.fail(f"job {jobid} did not write {path.name} ({cluster.job_state(jobid)}):"
                        f"\n{cluster.job_output(jobid)}")
        time.sleep(0.1)


@pytest.fixture(scope="module")
def collector(jobs: Jobs) -> JobsCollector:
    return JobsCollector(scratch_paths=[str(jobs.scratch)])


def value(registry: CollectorRegistry, name: str, jobid: int, **labels: str) -> float:
    """The sample of job `jobid` labelled with the job user; fails when it is absent."""
    found = registry.get_sample_value(name, {"jobid": str(jobid), "user": USER, **labels})
    assert found is not None, f"no {name} for job {jobid} with user={USER}"
    return found


def registry_of(collector: JobsCollector) -> CollectorRegistry:
    registry = CollectorRegistry()
    registry.register(collector)
    return registry


def schedstat(pid: int) -> tuple[float, float]:
    """Seconds the process ran on a CPU and waited in the run queue (/proc/<pid>/schedstat)."""
    run_ns, wait_ns, _ = Path(f"/proc/{pid}/schedstat").read_text().split()
    return int(run_ns) / 1e9, int(wait_ns) / 1e9


def burner_pid(cluster: SlurmCluster, jobid: int) -> int:
    for procs in cluster.job_cgroup(jobid, "cpuacct").rglob("cgroup.procs"):
        for pid in procs.read_text().split():
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                if cmdline.read().startswith(b"python3"):
                    return int(pid)
    raise AssertionError(f"no python3 process in job {jobid}")


# --- through the collector -------------------------------------------------------------


def test_it_labels_every_job_with_its_id_and_user(collector: JobsCollector, jobs: Jobs) -> None:
    registry = registry_of(collector)
    uid = str(pwd.getpwnam(USER).pw_uid)
    for jobid in jobs.ids:
        [info] = samples_of(registry, "jobs_info", jobid)
        assert info.labels["user"] == USER and info.labels["uid"] == uid
        assert (info.labels["partition"], info.labels["scheduler"]) == ("cw", "slurm")
        # The layout a test cluster (and a node with several slurmd) really has.
        assert re.fullmatch(rf"slurm_[^/]+/uid_{uid}/job_{jobid}", info.labels["cgroup"])
        assert value(registry, "jobs_processes", jobid) >= 1  # the script, not slurmstepd


def samples_of(registry: CollectorRegistry, name: str, jobid: int) -> list[Sample]:
    return [sample for metric in registry.collect() for sample in metric.samples
            if sample.name == name and sample.labels.get("jobid") == str(jobid)]


def test_it_sees_the_burner_use_about_one_core(
    cluster: SlurmCluster, collector: JobsCollector, jobs: Jobs
) -> None:
    registry = registry_of(collector)
    pid = burner_pid(cluster, jobs.burner)
    cpu0, sched0, t0 = (value(registry, "jobs_cpu_seconds_total", jobs.burner),
                        schedstat(pid), time.monotonic())
    time.sleep(4.0)
    cpu1, sched1, t1 = (value(registry, "jobs_cpu_seconds_total", jobs.burner),
                        schedstat(pid), time.monotonic())
    ran, waited = sched1[0] - sched0[0], sched1[1] - sched0[1]
    # The cgroup's figure is the kernel's run time of the process (plus its idle stepd).
    assert cpu1 - cpu0 == pytest.approx(ran, rel=0.1, abs=0.05)
    # About one core whenever the CPU was free for it: the burner never sleeps, so on a
    # busy shared machine the rest of the interval is spent waiting in the run queue.
    cores = (cpu1 - cpu0) / (t1 - t0 - waited)
    assert 0.7 <= cores <= 1.3, f"{cores:.2f} cores (ran {ran:.2f} s, waited {waited:.2f} s)"
    assert (cpu1 - cpu0) / (t1 - t0) <= 1.3
    per_core = sum(s.value for s in samples_of(registry, "jobs_cpu_core_seconds_total",
                                               jobs.burner))
    assert per_core == pytest.approx(value(registry, "jobs_cpu_seconds_total", jobs.burner),
                                     rel=0.05)
    assert value(registry, "jobs_cpus", jobs.burner) == 1


def task_pids(cluster: SlurmCluster, jobid: int) -> set[int]:
    """The job's own processes: those in the cpuacct task_* cgroups.

    Slurm 22.05 on v1 puts each step's slurmstepd (root) elsewhere in every controller: in
    freezer's job_<id>/ itself, in memory's and cpuset's step_<s>/, not at all in cpuacct.
    """
    return {int(pid) for procs in cluster.job_cgroup(jobid, "cpuacct").glob(
        "step_*/task_*/cgroup.procs") for pid in procs.read_text().split()}


def test_slurmstepd_is_not_one_of_the_jobs_processes(
    cluster: SlurmCluster, collector: JobsCollector, jobs: Jobs
) -> None:
    registry = registry_of(collector)
    assert len(task_pids(cluster, jobs.burner)) == 1  # the script exec'd python3
    assert value(registry, "jobs_processes", jobs.burner) == 1


def test_it_reports_the_memory_the_burner_holds(collector: JobsCollector, jobs: Jobs) -> None:
    # The kernel folds per-CPU memcg statistics into memory.stat lazily (every 2 s at the
    # latest, later on a busy machine): read again until the figure caught up, as a scrape
    # a moment later would; the deadline is only for the failure message.
    deadline = time.monotonic() + 20
    while True:
        registry = registry_of(collector)
        rss = value(registry, "jobs_memory_rss_bytes", jobs.burner)
        if rss == pytest.approx(HELD_BYTES, rel=0.10) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert rss == pytest.approx(HELD_BYTES, rel=0.10)
    assert value(registry, "jobs_memory_limit_bytes", jobs.burner) == 1 << 30
    assert value(registry, "jobs_memory_max_usage_bytes", jobs.burner) >= rss


def test_it_counts_the_bytes_written_to_scratch(collector: JobsCollector, jobs: Jobs) -> None:
    registry = registry_of(collector)
    assert value(registry, "jobs_write_bytes_total", jobs.writer) >= WRITTEN_BYTES
    assert value(registry, "jobs_write_operations_total", jobs.writer) >= WRITTEN_BYTES >> 20
    assert value(registry, "jobs_uses_scratch", jobs.writer) == 1
    assert value(registry, "jobs_uses_scratch", jobs.burner) == 0
    assert value(registry, "jobs_write_bytes_total", jobs.burner) < WRITTEN_BYTES


def test_it_sees_every_step_of_a_job(
    cluster: SlurmCluster, collector: JobsCollector, jobs: Jobs
) -> None:
    registry = registry_of(collector)
    assert len(cluster.steps(jobs.stepper)) == STEPS + 1  # with the batch step
    assert value(registry, "jobs_steps", jobs.stepper) == STEPS + 1
    # Each srun step runs `sleep` under its own slurmstepd: every sleep is counted (with
    # the batch script and its srun), no slurmstepd is.
    listed = [comm(pid) for procs in cluster.job_cgroup(jobs.stepper, "freezer").rglob(
        "cgroup.procs") for pid in procs.read_text().split()]
    assert listed.count("sleep") == STEPS
    assert listed.count("slurmstepd") >= STEPS + 1
    assert value(registry, "jobs_processes", jobs.stepper) == (
        len(listed) - listed.count("slurmstepd"))
    assert value(registry, "jobs_processes", jobs.stepper) >= 2 * STEPS + 1


def comm(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def test_a_cancelled_job_disappears_from_the_next_scrape(
    cluster: SlurmCluster, jobs: Jobs
) -> None:
    collector = JobsCollector()
    jobid = cluster.submit("sleep 3600", mem="50M", job_name="cancelled")
    cluster.wait_running(jobid)
    # slurmctld says RUNNING before slurmd has made the job's cgroups, and the cgroups exist
    # (exported with jobs_processes 0, as a job without processes is) a moment before the
    # job's first process is moved into them.
    deadline = time.monotonic() + 30
    while not (samples_of(registry := registry_of(collector), "jobs_processes", jobid)
               and value(registry, "jobs_processes", jobid) >= 1):
        assert time.monotonic() < deadline, f"job {jobid} never exported with its process"
        time.sleep(0.2)
    cluster.cancel(jobid)
    assert cluster.wait_done(jobid) == "CANCELLED"
    deadline = time.monotonic() + 15  # slurmd removes the cgroups right after the job
    while samples_of(registry := registry_of(collector), "jobs_info", jobid):
        assert time.monotonic() < deadline, f"job {jobid} still exported after it ended"
        time.sleep(0.2)
    assert registry.get_sample_value("jobs_exporter_errors_total", {"kind": "job_failed"}) == 0
    for other in jobs.ids:  # the others are unaffected
        assert samples_of(registry, "jobs_info", other)


# --- over HTTP, then through Prometheus --------------------------------------------------


@pytest.fixture
def served(jobs: Jobs, tmp_path: Path) -> Iterator[str]:
    """`clusterwatch jobs serve` on a free loopback port; yields host:port."""
    address = f"127.0.0.1:{free_port()}"
    log_path = tmp_path / "serve.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "clusterwatch", "jobs", "serve", "--listen", address,
             "--cgroup-root", "/sys/fs/cgroup", "--proc-root", "/proc",
             "--scratch", str(jobs.scratch)],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    code: Optional[int] = None
    try:
        deadline = time.monotonic() + 20
        while True:
            assert process.poll() is None, f"serve exited: {log_path.read_text()}"
            try:
                fetch(f"http://{address}/metrics")
                break
            except OSError:
                assert time.monotonic() < deadline, f"serve not up: {log_path.read_text()}"
                time.sleep(0.1)
        yield address
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            code = process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    assert code == 0, f"serve exited with {code} after SIGTERM: {log_path.read_text()}"


def fetch(url: str) -> str:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=10) as response:
        return bytes(response.read()).decode("utf-8")


def exposition(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_it_serves_the_same_series_over_http(served: str, jobs: Jobs) -> None:
    samples = exposition(fetch(f"http://{served}/metrics"))

    def at(name: str, jobid: int) -> float:
        key = (name, frozenset({("jobid", str(jobid)), ("user", USER)}))
        assert key in samples, f"no {name} for job {jobid} in /metrics"
        return samples[key]

    for jobid in jobs.ids:
        assert at("jobs_cpu_seconds_total", jobid) > 0
    assert at("jobs_memory_rss_bytes", jobs.burner) == pytest.approx(HELD_BYTES, rel=0.10)
    assert at("jobs_write_bytes_total", jobs.writer) >= WRITTEN_BYTES
    assert at("jobs_uses_scratch", jobs.writer) == 1
    assert at("jobs_steps", jobs.stepper) == STEPS + 1


def test_prometheus_scrapes_the_exporter_and_answers_queries(
    served: str, cluster: SlurmCluster, jobs: Jobs, tmp_path: Path
) -> None:
    ids = "|".join(str(jobid) for jobid in jobs.ids)
    pid = burner_pid(cluster, jobs.burner)
    sched0, t0 = schedstat(pid), time.time()
    with prometheus({"jobs": [served]}, tmp_path / "prometheus") as prom:
        answer = wait_for_query(
            prom.url, f'jobs_memory_rss_bytes{{jobid=~"{ids}"}}',
            lambda a: len(vector_rows(a)) == 3)
        rows = {row["metric"]["jobid"]: row for row in vector_rows(answer)}
        assert {row["metric"]["user"] for row in rows.values()} == {USER}
        assert {row["metric"]["job"] for row in rows.values()} == {"jobs"}
        assert float(rows[str(jobs.burner)]["value"][1]) == pytest.approx(HELD_BYTES, rel=0.1)

        # The raw samples Prometheus stored: the burner's counter grows by about one core
        # of the time it was not kept waiting by the machine's other work.
        answer = wait_for_query(
            prom.url, f'jobs_cpu_seconds_total{{jobid="{jobs.burner}"}}[20s]',
            lambda a: len(matrix_points(a)) >= 5, timeout=30)
        sched1, t1 = schedstat(pid), time.time()
        points = matrix_points(answer)
        (p0, v0), (p1, v1) = points[0], points[-1]
        assert t0 <= p0 < p1 <= t1
        free = 1 - (sched1[1] - sched0[1]) / (t1 - t0)
        assert 0.6 * free <= (v1 - v0) / (p1 - p0) <= 1.3, (points, free)

        answer = wait_for_query(
            prom.url, f'jobs_uses_scratch{{jobid="{jobs.writer}"}} == 1',
            lambda a: len(vector_rows(a)) == 1)
        answer = wait_for_query(
            prom.url, f'jobs_write_bytes_total{{jobid="{jobs.writer}"}} >= {WRITTEN_BYTES}',
            lambda a: len(vector_rows(a)) == 1)
        answer = wait_for_query(
            prom.url, f'jobs_steps{{jobid="{jobs.stepper}"}}',
            lambda a: len(vector_rows(a)) == 1)
        assert float(vector_rows(answer)[0]["value"][1]) == STEPS + 1


def matrix_points(answer: object) -> list[tuple[float, float]]:
    """(time, value) of the one series of a range-vector answer; [] until there is one."""
    if not isinstance(answer, dict) or answer.get("status") != "success":
        return []
    result = answer["data"]["result"]
    if answer["data"]["resultType"] != "matrix" or len(result) != 1:
        return []
    return [(float(t), float(v)) for t, v in result[0]["values"]]
