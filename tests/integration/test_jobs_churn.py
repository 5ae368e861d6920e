"""The job exporter under process churn on a real Slurm cluster (cgroup v1).

One job spawns thousands of short-lived processes (see CHURN) for CHURN_SECONDS, while the
test scrapes the exporter back to back. Every scrape must succeed and see the job, and no
`_total` series of the job may ever decrease, although the processes whose /proc/<pid>/io
made up the I/O totals keep exiting.
"""

from __future__ import annotations

import time

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from clusterwatch.jobs.exporter import JobsCollector
from clusterwatch.loopback.slurm import DEFAULT_JOB_USER, SlurmCluster

pytestmark = pytest.mark.integration

CHURN_SECONDS = 15
MIN_SCRAPES = 50
MIN_PROCESSES = 2000  # processes the job must have started, by its own count

# Batches of 16 quick subshells (fork, `head` writing 64 KiB, `cat` reading 256 KiB), and
# every 10th iteration a subshell that writes 64 KiB itself (a bash builtin, so the I/O is
# its own) and lives 0.3 s: its /proc/<pid>/io is seen by some scrapes, then it is gone.
CHURN = f"""\
mkdir -p churn-$SLURM_JOB_ID && cd churn-$SLURM_JOB_ID
head -c 262144 /dev/urandom > data
echo started > ../ready-$SLURM_JOB_ID
end=$((SECONDS + {CHURN_SECONDS}))
i=0
started=0
quick=()
while (( SECONDS < end )); do
    i=$((i + 1))
    ( head -c 65536 /dev/zero > w$((i % 8)); cat data > /dev/null ) &
    quick+=($!)
    started=$((started + 3))
    if (( i % 10 == 0 )); then
        ( printf '%65536s' x > s$((i % 4)); sleep 0.3 ) &
        started=$((started + 2))
    fi
    if (( ${{#quick[@]}} == 16 )); then wait "${{quick[@]}}"; quick=(); fi
done
wait
echo "processes $started"
"""

Series = tuple[str, frozenset[tuple[str, str]]]


def job_counters(text: str, jobid: int) -> dict[Series, float]:
    """The job's `_total` samples of one exposition."""
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text) for s in family.samples
        if s.name.endswith("_total") and s.labels.get("jobid") == str(jobid)
    }


def test_counters_never_decrease_while_the_job_churns_processes(
    slurm_cluster: SlurmCluster,
) -> None:
    jobid = slurm_cluster.submit(CHURN, mem="512M", job_name="churn")
    slurm_cluster.wait_running(jobid)
    ready = slurm_cluster.jobs_dir / f"ready-{jobid}"
    deadline = time.monotonic() + 30
    while not ready.exists():
        assert time.monotonic() < deadline, slurm_cluster.job_output(jobid)
        time.sleep(0.05)

    registry = CollectorRegistry()
    collector = JobsCollector()
    registry.register(collector)
    previous: dict[Series, float] = {}
    scrapes = 0
    slowest = 0.0
    spawned_seen = 0.0
    decreases: list[str] = []
    while slurm_cluster.job_state(jobid) == "RUNNING":
        started = time.monotonic()
        text = generate_latest(registry).decode("utf-8")  # raises if a scrape fails
        slowest = max(slowest, time.monotonic() - started)
        counters = job_counters(text, jobid)
        if not counters:
            continue  # between the job's last process and the end of the job
        scrapes += 1
        for key, value in counters.items():
            if key in previous and value < previous[key]:
                decreases.append(f"{key[0]}{dict(key[1])}: {previous[key]} -> {value}")
        previous.update(counters)
        spawned_seen = counters.get(
            ("jobs_spawned_processes_total",
             frozenset({("jobid", str(jobid)), ("user", DEFAULT_JOB_USER)})), spawned_seen)
        time.sleep(0.02)

    output = slurm_cluster.job_output(jobid)
    assert slurm_cluster.wait_done(jobid) == "COMPLETED", output
    assert not decreases, "\n".join(decreases[:20])
    assert scrapes >= MIN_SCRAPES, f"only {scrapes} scrapes saw the job"
    started_processes = int(output.split("processes", 1)[1].split()[0])
    assert started_processes >= MIN_PROCESSES, output
    # The exporter sees only processes alive at a scrape, but many of them: new ones at
    # most scrapes (a process list kept from an earlier read would show none).
    assert spawned_seen >= max(MIN_SCRAPES, scrapes / 2), (spawned_seen, scrapes)
    errors = collector.errors.snapshot()  # vanished processes are normal, not failures
    assert errors["job_failed"] == 0 and errors["malformed"] == 0, errors
    # ... but rare: listed PIDs that are long gone would all vanish, at every scrape.
    assert errors["process_vanished"] < spawned_seen, (errors, spawned_seen)
    assert slowest < 2.0, f"slowest scrape took {slowest:.2f} s"
    print(f"{scrapes} scrapes, slowest {slowest * 1000:.0f} ms; job started "
          f"{started_processes} processes, the exporter saw {spawned_seen:.0f}; {errors}")
