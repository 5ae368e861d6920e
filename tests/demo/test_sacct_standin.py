"""The demo's sacct stand-in, run as the monitor runs sacct: the script it installs, read by
the monitor's own adapter (SacctAccounting), and the refusals sacct would make."""

from __future__ import annotations

import getpass
import io
import stat
import subprocess
import time
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from clusterwatch.demo import sacct_standin
from clusterwatch.demo.sacct_lines import job_lines
from clusterwatch.demo.usage_jobs import FIRST_JOBID, plans
from clusterwatch.loopback.job_series import JobPlan, history
from clusterwatch.monitor.usage.accounting.interface import UnknownJob
from clusterwatch.monitor.usage.accounting.sacct import SacctAccounting

NOW = time.time()


@pytest.fixture(scope="module")
def jobs() -> list[JobPlan]:
    return plans(NOW)


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory, jobs: list[JobPlan]) -> Path:
    directory = tmp_path_factory.mktemp("accounting")
    return sacct_standin.install(directory, [job_lines(history(plan)) for plan in jobs])


def run(program: Path, *arguments: str, time_format: str = "%s"
        ) -> subprocess.CompletedProcess[str]:
    environ = {"SLURM_TIME_FORMAT": time_format, "PATH": "/usr/bin:/bin"}
    return subprocess.run([str(program), *arguments], capture_output=True, text=True,
                          timeout=60, env=environ)


def test_it_installs_a_private_script_and_its_data(program: Path) -> None:
    assert stat.S_IMODE(program.stat().st_mode) == 0o700
    assert program.read_text().startswith("#!/bin/sh\n")
    assert (program.parent / "sacct-jobs.json").is_file()


def test_the_monitors_adapter_reads_a_job_through_it(program: Path, jobs: list[JobPlan]) -> None:
    sacct = SacctAccounting(str(program))
    for plan in jobs:
        record = sacct.job(plan.jobid)
        assert (record.jobid, record.name, record.cpus_allocated) == \
            (plan.jobid, plan.name, plan.cpus)
        assert record.end is not None and record.end.timestamp() == plan.end
    with pytest.raises(UnknownJob, match="job 99 is unknown to accounting"):
        sacct.job("99")


def test_it_lists_a_users_jobs_and_the_jobs_ended_since(program: Path,
                                                       jobs: list[JobPlan]) -> None:
    sacct = SacctAccounting(str(program))
    month_ago = datetime.now(timezone.utc) - timedelta(days=30)
    assert sorted(r.jobid for r in sacct.jobs_of_user("alice", month_ago)) == \
        sorted(plan.jobid for plan in jobs)
    assert sacct.jobs_of_user("bob", month_ago) == []
    # Only the jobs that ended since the moment, oldest end first.
    cut = sorted(plan.end for plan in jobs)[1]
    ended = sacct.jobs_ended_since(datetime.fromtimestamp(cut, timezone.utc))
    by_end = sorted(jobs, key=lambda p: (p.end, p.jobid))
    assert [r.jobid for r in ended] == [p.jobid for p in by_end if p.end >= cut]
    # A start after every job's end: none of them ran since.
    assert sacct.jobs_of_user("alice", datetime.fromtimestamp(NOW + 60, timezone.utc)) == []


def test_it_prints_fields_in_the_order_asked_with_a_header_unless_told(program: Path) -> None:
    first = str(FIRST_JOBID)
    done = run(program, "-P", "-j", first, "--format=jobid,State,MaxRSS%20")
    assert done.returncode == 0, done.stderr
    header, allocation, batch, extern = done.stdout.splitlines()
    assert header == "JobID|State|MaxRSS"
    assert allocation == f"{first}|COMPLETED|"
    assert batch.startswith(f"{first}.batch|COMPLETED|") and batch.endswith("K")
    assert extern == f"{first}.extern|COMPLETED|1024K"
    done = run(program, "--parsable", "--noheader", "--allocations", "-j", first, "-o", "JobID")
    assert done.stdout == f"{first}|\n"


def test_it_writes_times_as_slurm_time_format_says(program: Path, jobs: list[JobPlan]) -> None:
    plan = jobs[0]
    epoch = run(program, "-P", "-n", "-X", "-j", plan.jobid, "-o", "Start,End")
    assert epoch.stdout == f"{round(plan.start)}|{round(plan.end)}\n"
    standard = run(program, "-P", "-n", "-X", "-j", plan.jobid, "-o", "Start", time_format="")
    assert standard.stdout.strip() == time.strftime("%Y-%m-%dT%H:%M:%S",
                                                    time.localtime(plan.start))


def test_without_a_user_it_lists_the_running_users_jobs(program: Path) -> None:
    done = run(program, "-P", "-n", "-X", "-S", "2000-01-01", "-o", "User")
    expected = {"alice"} if getpass.getuser() == "alice" else set()
    assert set(done.stdout.split()) == expected
    everyone = run(program, "-P", "-n", "-X", "--allusers", "-S", "2000-01-01", "-o", "User")
    assert everyone.stdout.split() == ["alice"] * 4


@pytest.mark.parametrize(("arguments", "message"), [
    (["-P", "--format=JobID,Nonsense"], 'Invalid field requested: "Nonsense"'),
    (["-P", "-a", "--starttime", "yesterday-ish"], "invalid time specification"),
    (["-a", "-o", "JobID"], "only the parsable outputs"),
])
def test_it_refuses_what_sacct_refuses_in_one_line_with_status_1(
        program: Path, arguments: Sequence[str], message: str) -> None:
    done = run(program, *arguments)
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1 and message in done.stderr
    assert done.stderr.startswith("sacct: error: ")


def test_an_unknown_option_is_status_1_not_2(program: Path) -> None:
    done = run(program, "-P", "--jobz", "1")
    assert done.returncode == 1 and "--jobz" in done.stderr and "Traceback" not in done.stderr


def test_without_its_data_it_says_so_and_invents_nothing(tmp_path: Path) -> None:
    out = io.StringIO()
    assert sacct_standin.main(["-P", "-a"], environ={}, out=out) == 1
    missing = {sacct_standin.DATA_VARIABLE: str(tmp_path / "gone.json")}
    assert sacct_standin.main(["-P", "-a"], environ=missing, out=out) == 1
    (tmp_path / "bad.json").write_text('{"not": "a list"}')
    bad = {sacct_standin.DATA_VARIABLE: str(tmp_path / "bad.json")}
    assert sacct_standin.main(["-P", "-a"], environ=bad, out=out) == 1
    assert out.getvalue() == ""
