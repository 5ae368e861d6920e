"""The slurmdb source reading the restricted view of the real cluster's accounting database:
the same real jobs as the sacct tests, and the two sources agree on every field the view has;
its failures (login refused, no view, no server, no answer) as the monitor sees them."""

from __future__ import annotations

import dataclasses
import time
from datetime import datetime, timezone

import pytest

from clusterwatch.loopback.services import free_port
from clusterwatch.monitor.usage.accounting.interface import (
    AccountingConfigError,
    AccountingFailed,
    InvalidJobId,
    JobRecord,
    UnknownJob,
)
from clusterwatch.monitor.usage.accounting.sacct import SacctAccounting
from clusterwatch.monitor.usage.accounting.slurmdb import SlurmDbAccounting
from clusterwatch.monitor.usage.accounting.slurmdb_settings import SlurmDbSettings
from tests.monitor.usage.real_slurm import OTHER_USER, USER, RealJobs, real_jobs
from tests.monitor.usage.slurmdb_support import create_admin, create_view, silent_port

pytestmark = pytest.mark.integration

READER = "cw_source"
NOT_IN_THE_VIEW = ("max_rss_bytes", "total_cpu_s", "user_cpu_s", "system_cpu_s")
SHARED = tuple(f.name for f in dataclasses.fields(JobRecord) if f.name not in NOT_IN_THE_VIEW)


@pytest.fixture(scope="module")
def jobs(pytestconfig: pytest.Config) -> RealJobs:
    return real_jobs(pytestconfig)


@pytest.fixture(scope="module")
def settings(jobs: RealJobs, tmp_path_factory: pytest.TempPathFactory) -> SlurmDbSettings:
    create_admin(jobs)
    directory = tmp_path_factory.mktemp("slurmdb")
    target = directory / "password"
    made = create_view(jobs, directory, "--view-user", READER, "--password-file", str(target))
    assert made.returncode == 0, made.stderr
    return SlurmDbSettings(host="127.0.0.1", port=jobs.cluster.accounting.database.port,
                           user=READER, schema="clusterwatch_usage",
                           password=target.read_text().strip(), timeout_s=10.0)


@pytest.fixture(scope="module")
def slurmdb(settings: SlurmDbSettings) -> SlurmDbAccounting:
    return SlurmDbAccounting(settings)


@pytest.fixture(scope="module")
def sacct(jobs: RealJobs) -> SacctAccounting:
    return SacctAccounting(jobs.cluster.accounting.sacct_program)


def shared(job: JobRecord, *leave_out: str) -> dict[str, object]:
    return {name: getattr(job, name) for name in SHARED if name not in leave_out}


def test_it_agrees_with_sacct_on_every_field_the_view_has(
    jobs: RealJobs, slurmdb: SlurmDbAccounting, sacct: SacctAccounting
) -> None:
    for jobid in (*jobs.ended, jobs.array):
        from_view, from_sacct = slurmdb.job(jobid), sacct.job(jobid)
        assert shared(from_view) == shared(from_sacct), jobid
        # Not in the view: not measured, never 0.
        assert all(getattr(from_view, name) is None for name in NOT_IN_THE_VIEW)
    holder = slurmdb.job(jobs.holder)
    assert (holder.cpus_allocated, holder.memory_requested_bytes) == (2, 300 << 20)
    assert slurmdb.job(jobs.cancelled).state_reason == "by 0"
    assert slurmdb.job(jobs.killed).exit_code == "0:9"


def test_it_reports_a_running_job_as_running(
    jobs: RealJobs, slurmdb: SlurmDbAccounting, sacct: SacctAccounting
) -> None:
    from_view, from_sacct = slurmdb.job(jobs.running), sacct.job(jobs.running)
    assert shared(from_view, "elapsed_s") == shared(from_sacct, "elapsed_s")
    assert (from_view.state, from_view.end, from_view.running) == ("RUNNING", None, True)
    assert abs(from_view.elapsed_s - from_sacct.elapsed_s) <= 2  # read a moment apart


def test_it_finds_an_array_task_by_its_own_number(
    jobs: RealJobs, slurmdb: SlurmDbAccounting
) -> None:
    task = slurmdb.job(f"{jobs.array}_1")
    raw = jobs.cluster.command("sacct", "-n", "-P", "-X", "--format=JobIDRaw", "-j",
                               f"{jobs.array}_1").stdout.split()[0]
    assert slurmdb.job(raw) == task and task.jobid == f"{jobs.array}_1"


def test_it_lists_the_same_array_tasks_as_sacct(
        jobs: RealJobs, slurmdb: SlurmDbAccounting, sacct: SacctAccounting) -> None:
    assert ([shared(t) for t in slurmdb.array_tasks(jobs.array)]
            == [shared(t) for t in sacct.array_tasks(jobs.array)])
    assert len(slurmdb.array_tasks(jobs.array)) == 2
    assert slurmdb.array_tasks(jobs.burner) == []


def test_it_says_unknown_and_malformed_jobs_apart(
    slurmdb: SlurmDbAccounting, settings: SlurmDbSettings
) -> None:
    with pytest.raises(UnknownJob, match=r"^job 4000000000 is unknown to accounting$"):
        slurmdb.job("4000000000")
    with pytest.raises(UnknownJob):
        slurmdb.job("4000000000_3")
    nowhere = SlurmDbAccounting(dataclasses.replace(settings, port=free_port()))
    for jobid in ("12a", "1 OR 1=1", "123_[1-5]", "123.batch", ""):
        with pytest.raises(InvalidJobId):  # refused before any connection
            nowhere.job(jobid)


def test_it_lists_the_same_jobs_of_a_user_as_sacct(
    jobs: RealJobs, slurmdb: SlurmDbAccounting, sacct: SacctAccounting, settings: SlurmDbSettings
) -> None:
    for user in (USER, OTHER_USER):
        from_view = {job.jobid: job for job in slurmdb.jobs_of_user(user, jobs.since)}
        from_sacct = {job.jobid: job for job in sacct.jobs_of_user(user, jobs.since)}
        assert set(from_view) == set(from_sacct) and from_view
        for jobid, job in from_view.items():
            assert shared(job, "elapsed_s") == shared(from_sacct[jobid], "elapsed_s")
    # A monitor host that does not know the user finds the jobs by the association's name.
    stranger = SlurmDbAccounting(settings, uid_of_user=lambda name: None)
    assert {job.jobid for job in stranger.jobs_of_user(USER, jobs.since)} == {
        job.jobid for job in slurmdb.jobs_of_user(USER, jobs.since)}
    assert slurmdb.jobs_of_user("nobody-here", jobs.since) == []


def test_it_lists_the_same_ended_jobs_as_sacct_oldest_first(
    jobs: RealJobs, slurmdb: SlurmDbAccounting, sacct: SacctAccounting
) -> None:
    from_view, from_sacct = slurmdb.jobs_ended_since(jobs.since), sacct.jobs_ended_since(
        jobs.since)
    # Jobs of other tests may still end on the shared cluster, and reach slurmdbd, between
    # the two readings: compare every job that had ended by the last of this module's own
    # (all recorded before the tests began), which both must list alike and in order.
    mine = [job for job in from_sacct if job.jobid in jobs.ended]
    assert {job.jobid for job in mine} == set(jobs.ended)
    cut = max(job.end for job in mine if job.end)

    def settled(listed: list[JobRecord]) -> list[dict[str, object]]:
        return [shared(job) for job in listed if job.end and job.end <= cut]

    assert settled(from_view) == settled(from_sacct)
    assert len(settled(from_sacct)) >= len(jobs.ended)
    assert set(jobs.ended) <= {job.jobid for job in from_view}
    assert jobs.running not in {job.jobid for job in from_view}


def test_a_refused_login_is_a_configuration_error_without_the_password(
    settings: SlurmDbSettings
) -> None:
    wrong = SlurmDbAccounting(dataclasses.replace(settings, password="wrong-Pa55word"))
    with pytest.raises(AccountingConfigError) as refused:
        wrong.job("1")
    message = str(refused.value)
    assert message.startswith(f"the Slurm accounting database refused {READER}: Access denied")
    assert "wrong-Pa55word" not in message and settings.password not in message


def test_a_missing_view_says_how_to_create_it(settings: SlurmDbSettings) -> None:
    elsewhere = SlurmDbAccounting(dataclasses.replace(settings, schema="no_such_schema"))
    with pytest.raises(AccountingConfigError) as refused:
        elsewhere.jobs_ended_since(datetime.now(timezone.utc))
    assert str(refused.value).startswith(
        f"the Slurm accounting database lets {READER} read no view no_such_schema.jobs: ")
    assert "create it and its grant with clusterwatch monitor create_slurmdb_view" in str(
        refused.value)


def test_a_server_that_is_not_there_is_a_failure(settings: SlurmDbSettings) -> None:
    nowhere = SlurmDbAccounting(dataclasses.replace(settings, port=free_port()))
    with pytest.raises(AccountingFailed, match=r"^the Slurm accounting database failed: Can't "
                                               "connect to MySQL server"):
        nowhere.job("1")


def test_a_server_that_never_answers_times_out(settings: SlurmDbSettings) -> None:
    started = time.monotonic()
    with silent_port() as port, pytest.raises(AccountingFailed, match="timed out"):
        SlurmDbAccounting(dataclasses.replace(settings, port=port, timeout_s=1.0)).job("1")
    assert time.monotonic() - started < 5


def test_it_lists_the_same_running_jobs_as_sacct(
        jobs: RealJobs, slurmdb: SlurmDbAccounting, sacct: SacctAccounting) -> None:
    from_view = {job.jobid: job for job in slurmdb.running_jobs()}
    from_sacct = {job.jobid: job for job in sacct.running_jobs()}
    assert jobs.running in from_view and not set(jobs.ended) & set(from_view)
    # Other tests' jobs may start or end between the two readings: the module's own agree.
    assert (shared(from_view[jobs.running], "elapsed_s")
            == shared(from_sacct[jobs.running], "elapsed_s"))
    assert {job.state for job in from_view.values()} == {"RUNNING"}
