from __future__ import annotations

from datetime import datetime, timezone

import pytest

from clusterwatch.monitor.usage.accounting.interface import AccountingFailed
from clusterwatch.monitor.usage.accounting.sacct_parse import find_job, parse_sacct
from tests.monitor.usage.sacct_support import COMPLETED_JOB, SEP, line, step

GiB = 1024**3


def test_it_reads_a_completed_job_with_its_steps() -> None:
    (job,) = parse_sacct(COMPLETED_JOB, SEP)
    assert (job.jobid, job.user, job.account, job.partition) == ("4242", "alice", "physics", "cpu")
    assert (job.state, job.state_reason, job.running) == ("COMPLETED", "", False)
    assert job.start == datetime(2023, 11, 14, 22, 13, 20, tzinfo=timezone.utc)
    assert job.end is not None and job.start is not None
    assert (job.end - job.start).total_seconds() == job.elapsed_s == 3600
    assert (job.cpus_allocated, job.nodes, job.nodelist, job.gpus) == (2, 1, "node01", 0)
    assert job.memory_requested_bytes == 8 * GiB
    assert job.max_rss_bytes == 204800 * 1024  # the largest step, not the extern step
    assert (job.total_cpu_s, job.user_cpu_s, job.system_cpu_s) == (3600, 3540.5, 60.25)
    assert job.time_limit_s == 7200
    assert job.name == "analysis|step 1"  # the separator inside the name is kept


def test_it_reports_a_running_job_as_running_without_an_end() -> None:
    (job,) = parse_sacct(line(State="RUNNING", End="Unknown", Elapsed="00:10:00",
                              MaxRSS="", TotalCPU="00:00:00"), SEP)
    assert job.running and job.end is None and job.elapsed_s == 600
    assert job.max_rss_bytes is None  # no step has ended: not measured, not zero


def test_it_reads_a_pending_job_without_times_or_cpus() -> None:
    (job,) = parse_sacct(line(State="PENDING", Start="None", End="Unknown", Elapsed="00:00:00",
                              AllocCPUS="0", AllocTRES="", NodeList="None assigned"), SEP)
    assert job.running and job.start is None and job.cpus_allocated == 0


def test_it_keeps_who_cancelled_a_job() -> None:
    (job,) = parse_sacct(line(State="CANCELLED by 1000"), SEP)
    assert (job.state, job.state_reason, job.running) == ("CANCELLED", "by 1000", False)


def test_it_falls_back_to_reqmem_per_cpu_of_older_slurm() -> None:
    (job,) = parse_sacct(line(ReqMem="1000Mc", ReqTRES="cpu=2,node=1", AllocCPUS="2"), SEP)
    assert job.memory_requested_bytes == 2000 * 1024**2


def test_it_counts_gpus_from_the_allocation() -> None:
    (job,) = parse_sacct(line(AllocTRES="cpu=8,gres/gpu:a100=2,gres/gpu=2,mem=64G,node=1"), SEP)
    assert job.gpus == 2


def test_it_finds_array_tasks_by_their_id_or_their_raw_id() -> None:
    output = "\n".join([
        line(JobID="500_1", JobIDRaw="500"), step("500_1.batch", "10M"),
        line(JobID="500_2", JobIDRaw="502"), step("500_2.batch", "20M"),
    ])
    assert [j.jobid for j in parse_sacct(output, SEP)] == ["500_1", "500_2"]
    by_raw = find_job(output, "502", SEP)
    assert by_raw is not None and by_raw.jobid == "500_2"
    assert by_raw.max_rss_bytes == 20 * 1024**2
    by_task = find_job(output, "500_1", SEP)
    assert by_task is not None and by_task.max_rss_bytes == 10 * 1024**2
    assert find_job(output, "999", SEP) is None


def test_it_keeps_the_components_of_a_heterogeneous_job_apart() -> None:
    output = "\n".join([
        line(JobID="700+0", JobIDRaw="700", AllocCPUS="4"), step("700+0.0", "1G"),
        line(JobID="700+1", JobIDRaw="701", AllocCPUS="1"), step("700+1.0", "2G"),
    ])
    first, second = parse_sacct(output, SEP)
    assert (first.cpus_allocated, first.max_rss_bytes) == (4, GiB)
    assert (second.cpus_allocated, second.max_rss_bytes) == (1, 2 * GiB)


def test_it_ignores_steps_of_jobs_outside_the_output() -> None:
    assert parse_sacct(step("9.batch", "1G"), SEP) == []


@pytest.mark.parametrize(("output", "complaint"), [
    (line(Elapsed="soon"), "sacct line 1: field Elapsed: not a duration"),
    (line(AllocCPUS="two"), "sacct line 1: field AllocCPUS"),
    (COMPLETED_JOB + step("4242.0", "huge"), "sacct line 4: field MaxRSS"),
], ids=["Elapsed", "AllocCPUS", "MaxRSS-of-a-step"])
def test_it_leaves_out_a_line_it_cannot_read_naming_its_line_and_field(
        output: str, complaint: str) -> None:
    listing = parse_sacct(output, SEP)
    assert listing == []
    [lost] = listing.unreadable
    assert lost.jobid == "4242" and lost.reason.startswith(complaint)
    with pytest.raises(AccountingFailed, match=complaint):  # the job asked for by its id
        find_job(output, "4242", SEP)


def test_it_calls_output_that_is_not_its_records_a_failure() -> None:
    with pytest.raises(AccountingFailed, match="sacct line 1: 1 fields where 22 were asked"):
        parse_sacct("garbage", SEP)
