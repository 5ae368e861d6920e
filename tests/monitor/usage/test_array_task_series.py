"""An array task's (and a heterogeneous component's) series: the exporter labels a job by the
number its cgroup directory carries, the job's own number (sacct's JobIDRaw: 130 for task
123_4), so the report must ask Prometheus for that number, not for `123_4`, which no series
has. Checked on a loopback Prometheus through the API and the kept summary's plots, and on
real Slurm: the exporter's discovery of a running array task against sacct's JobIDRaw."""

from __future__ import annotations

import time
from datetime import timedelta
from pathlib import Path

import pytest

from clusterwatch.jobs.file_reader import ErrorCounts
from clusterwatch.jobs.slurm_v1 import SlurmV1
from clusterwatch.monitor.usage.accounting.sacct import SacctAccounting
from clusterwatch.monitor.usage.config import read_config
from clusterwatch.monitor.usage.metrics.series import JobSeries
from clusterwatch.monitor.usage.models import KeptSummary
from clusterwatch.monitor.usage.usage_report import load_report
from tests.monitor.usage.page_support import client_of
from tests.monitor.usage.real_slurm import RealJobs, real_jobs
from tests.monitor.usage.site import UsageSite

pytestmark = pytest.mark.django_db


def test_it_measures_an_array_task_by_its_own_number(usage_site: UsageSite) -> None:
    start, end = usage_site.job("123_4", raw_id="130", cpus=2, req_mem="8G")
    # What the exporter scraped: its `jobid` label is the task's own number.
    usage_site.measured("130", start, end, busy_cpus=1.0, memory_bytes=200 * 1024**2)
    client = client_of("alice")
    document = client.get("/api/v1/jobs/123_4/usage").json()
    assert (document["jobid"], document["jobid_raw"]) == ("123_4", "130")
    assert document["measured"] is True and document["cpu_source"] == "exporter"
    assert document["cpu_efficiency"] == pytest.approx(0.5, abs=0.02)
    assert "low_cpu_efficiency" in {w["code"] for w in document["warnings"]}
    asked = {query["query"] for query in usage_site.prometheus.queries}
    assert 'jobs_cpu_seconds_total{jobid="130"}' in asked
    assert not any('"123_4"' in query for query in asked)
    # Kept, its plots still read the task's series by its own number.
    assert KeptSummary.objects.filter(jobid="123_4").exists()
    usage_site.fail("sacct: error: slurmdbd is down")
    kept = load_report("123_4")
    assert kept.kept and kept.series is not None and kept.series.get("cpu_seconds")


def test_a_summary_kept_without_the_raw_number_reads_series_by_the_job_id(
        usage_site: UsageSite) -> None:
    # Summaries kept before documents carried `jobid_raw`: plain jobs are read as before.
    start, end = usage_site.job("4242")
    usage_site.measured("4242", start, end, busy_cpus=2.0, memory_bytes=1024**3)
    client_of("alice").get("/api/v1/jobs/4242/usage")
    kept = KeptSummary.objects.get(jobid="4242")
    del kept.document["jobid_raw"]
    kept.save()
    report = load_report("4242")
    assert report.kept and report.series is not None and report.series.get("cpu_seconds")


@pytest.mark.integration
def test_on_real_slurm_the_report_asks_for_the_number_the_exporter_labels_a_task_with(
        pytestconfig: pytest.Config, tmp_path: Path) -> None:
    jobs: RealJobs = real_jobs(pytestconfig)
    cluster = jobs.cluster
    array = cluster.submit("sleep 30", mem="50M", array="1-2", job_name="tasks")
    task = f"{array}_1"
    deadline = time.monotonic() + 60
    while True:
        out = cluster.command("squeue", "-h", "-r", "-t", "R", "-o", "%i %A").stdout
        running = dict(line.split() for line in out.splitlines() if line.strip())
        if task in running:
            own_number = running[task]
            break
        assert time.monotonic() < deadline, f"{task} did not start: {out!r}"
        time.sleep(0.2)
    cluster.wait_cgroup(int(own_number), "cpuacct")
    labelled = {job.jobid for job in SlurmV1().discover(str(cluster.cgroup_root),
                                                         ErrorCounts())}
    assert own_number in labelled and task not in labelled
    assert own_number != str(array)  # task 1 is not the one that keeps the array's number
    cluster.accounting.wait_accounted(task, ended=False)

    asked: list[str] = []

    def fetch(_url: str, jobid: str, *_args: object, **_kwargs: object) -> JobSeries:
        asked.append(jobid)
        return JobSeries(0.0, 0.0, 30.0, 0, {})

    config = read_config({"CLUSTERWATCH_PROMETHEUS_URL": "http://127.0.0.1:9"}, tmp_path)
    report = load_report(task, config=config,
                         source=SacctAccounting(cluster.accounting.sacct_program),
                         fetch=fetch)
    assert report.document["jobid"] == task and report.document["running"] is True
    assert asked == [own_number]
    assert report.document["start"] is not None
    assert timedelta(0) <= timedelta(seconds=report.document["elapsed_s"]) < timedelta(
        minutes=5)
