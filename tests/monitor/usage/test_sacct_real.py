"""SacctAccounting against real Slurm 22.05 (slurmctld, slurmdbd, MariaDB) and real jobs: what
each job did (CPU burned, memory held, exit, cancel, array task, still running) as sacct
reports it through the adapter. Root and cgroup v1, like the exporter's Slurm tests."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from clusterwatch.monitor.usage.accounting.interface import JobRecord, UnknownJob
from clusterwatch.monitor.usage.accounting.sacct import SacctAccounting
from tests.monitor.usage.real_slurm import (
    BURN_CPU_S,
    HELD_MIB,
    HOLD_S,
    ODD_NAME,
    OTHER_ACCOUNT,
    OTHER_USER,
    USER,
    RealJobs,
    real_jobs,
)

pytestmark = pytest.mark.integration

MIB = 1 << 20


@pytest.fixture(scope="module")
def jobs(pytestconfig: pytest.Config) -> RealJobs:
    return real_jobs(pytestconfig)


@pytest.fixture(scope="module")
def sacct(jobs: RealJobs) -> SacctAccounting:
    # As the monitor runs it: CLUSTERWATCH_SACCT names a program, no SLURM_CONF around.
    return SacctAccounting(jobs.cluster.accounting.sacct_program)


def raw_id(jobs: RealJobs, jobid: str) -> str:
    out = jobs.cluster.command("sacct", "-n", "-P", "-X", "--format=JobIDRaw", "-j", jobid)
    return out.stdout.split()[0]


def test_it_reads_the_cpu_time_a_job_burned(jobs: RealJobs, sacct: SacctAccounting) -> None:
    job = sacct.job(jobs.burner)
    assert (job.jobid, job.user, job.account, job.partition) == (jobs.burner, USER, "cwlab",
                                                                 "cw")
    assert (job.state, job.state_reason, job.exit_code, job.name) == ("COMPLETED", "", "0:0",
                                                                      "burner")
    assert job.cpus_allocated == 1 and job.nodes == 1 and job.gpus == 0
    assert job.nodelist == jobs.cluster.node_name
    assert job.memory_requested_bytes == 200 * MIB
    assert job.total_cpu_s is not None and job.user_cpu_s is not None
    assert job.system_cpu_s is not None
    assert BURN_CPU_S <= job.total_cpu_s <= BURN_CPU_S + 1.0
    assert job.user_cpu_s + job.system_cpu_s == pytest.approx(job.total_cpu_s, abs=0.01)
    # One busy thread: the wall time is at least the CPU time (whole seconds in sacct).
    assert job.start is not None and job.end is not None
    assert job.elapsed_s == (job.end - job.start).total_seconds() >= int(BURN_CPU_S) - 1
    assert job.time_limit_s is None and not job.running


def test_it_reads_the_memory_a_job_held(jobs: RealJobs, sacct: SacctAccounting) -> None:
    job = sacct.job(jobs.holder)
    assert job.cpus_allocated == 2 and job.memory_requested_bytes == 300 * MIB
    assert job.max_rss_bytes is not None
    # The held pages plus the interpreter, never less than what was held.
    assert HELD_MIB * MIB <= job.max_rss_bytes <= (HELD_MIB + 40) * MIB
    assert job.elapsed_s >= HOLD_S
    assert job.name == ODD_NAME  # `|` and non-ASCII letters survive the parsable output


def test_it_reads_how_jobs_failed(jobs: RealJobs, sacct: SacctAccounting) -> None:
    failed, killed = sacct.job(jobs.failed), sacct.job(jobs.killed)
    assert (failed.state, failed.exit_code) == ("FAILED", "3:0")
    assert (killed.state, killed.exit_code) == ("FAILED", "0:9")  # SIGKILL
    assert failed.end is not None and not failed.running


def test_it_reads_who_cancelled_a_job(jobs: RealJobs, sacct: SacctAccounting) -> None:
    job = sacct.job(jobs.cancelled)
    assert (job.state, job.state_reason) == ("CANCELLED", "by 0")  # root's scancel
    assert job.end is not None and not job.running


def test_it_finds_an_array_task_by_its_id_and_by_its_own_number(
    jobs: RealJobs, sacct: SacctAccounting
) -> None:
    first = sacct.job(f"{jobs.array}_1")
    assert (first.jobid, first.state, first.name) == (f"{jobs.array}_1", "COMPLETED", "array")
    raw = raw_id(jobs, f"{jobs.array}_1")
    assert raw != jobs.array
    assert sacct.job(raw) == first
    # The array's own number is the task that kept it (sacct's JobIDRaw).
    kept = sacct.job(jobs.array)
    assert kept.jobid.startswith(f"{jobs.array}_") and raw_id(jobs, kept.jobid) == jobs.array


def test_it_lists_an_arrays_tasks_by_the_arrays_id_and_none_of_a_plain_job(
        jobs: RealJobs, sacct: SacctAccounting) -> None:
    tasks = sacct.array_tasks(jobs.array)
    assert [t.jobid for t in tasks] == [f"{jobs.array}_1", f"{jobs.array}_2"]
    assert {t.state for t in tasks} == {"COMPLETED"}
    assert sacct.array_tasks(jobs.burner) == []
    # The first task's own number is no array's (the last task keeps the array's).
    assert sacct.array_tasks(raw_id(jobs, f"{jobs.array}_1")) == []


def test_it_reports_a_running_job_as_running(jobs: RealJobs, sacct: SacctAccounting) -> None:
    job = sacct.job(jobs.running)
    assert (job.state, job.running, job.end) == ("RUNNING", True, None)
    assert job.time_limit_s == 86400 and job.start is not None
    so_far = (datetime.now(timezone.utc) - job.start).total_seconds()
    assert 0 <= job.elapsed_s <= so_far + 1


def test_it_says_a_job_that_never_existed_is_unknown(sacct: SacctAccounting) -> None:
    with pytest.raises(UnknownJob):
        sacct.job("4000000000")


def test_it_lists_a_users_jobs_and_no_one_elses(jobs: RealJobs, sacct: SacctAccounting) -> None:
    mine = {job.jobid: job for job in sacct.jobs_of_user(USER, jobs.since)}
    expected = set(jobs.ended) - {jobs.other} | {jobs.running}
    assert expected <= set(mine) and jobs.other not in mine
    assert {job.user for job in mine.values()} == {USER}
    theirs = sacct.jobs_of_user(OTHER_USER, jobs.since)
    assert [(job.jobid, job.account) for job in theirs] == [(jobs.other, OTHER_ACCOUNT)]


def test_it_lists_the_jobs_that_ended_since_a_time_oldest_first(
    jobs: RealJobs, sacct: SacctAccounting
) -> None:
    ended = sacct.jobs_ended_since(jobs.since)
    ids = [job.jobid for job in ended]
    assert set(jobs.ended) <= set(ids) and jobs.running not in ids
    assert ended == sorted(ended, key=ended_at)
    latest = max(ended, key=ended_at)
    assert [job.jobid for job in sacct.jobs_ended_since(ended_at(latest))] == [
        job.jobid for job in ended if ended_at(job) == ended_at(latest)]


def ended_at(job: JobRecord) -> datetime:
    assert job.end is not None
    return job.end



def test_it_lists_the_jobs_running_now_of_every_user(jobs: RealJobs,
                                                     sacct: SacctAccounting) -> None:
    running = {job.jobid: job for job in sacct.running_jobs()}
    assert jobs.running in running  # other tests' jobs may run on the shared cluster too
    assert not set(jobs.ended) & set(running)  # ended ones are not listed: no time window
    assert {job.state for job in running.values()} == {"RUNNING"}
    job = running[jobs.running]
    assert (job.user, job.end, job.time_limit_s) == (USER, None, 86400)
    assert job.jobid_raw == jobs.running and job.cpus_allocated == 1
