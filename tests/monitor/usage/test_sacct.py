"""SacctAccounting against a fake `sacct` program run as a real subprocess."""

from __future__ import annotations

import re
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from clusterwatch.errors import ConfigError
from clusterwatch.monitor.usage.accounting.interface import (
    AccountingFailed,
    InvalidJobId,
    UnknownJob,
)
from clusterwatch.monitor.usage.accounting.sacct import SacctAccounting
from tests.monitor.usage.sacct_support import COMPLETED_JOB, line, with_delimiter

SINCE = datetime(2023, 11, 14, tzinfo=timezone.utc)


def fake_sacct(tmp_path: Path, body: str) -> tuple[str, Path]:
    """A `sacct` that records its argv and SLURM_TIME_FORMAT, then runs `body` (sh)."""
    calls = tmp_path / "calls.jsonl"
    script = tmp_path / "sacct"
    script.write_text(
        "#!/bin/sh\n"
        f"printf '%s\\n' \"$SLURM_TIME_FORMAT $*\" >> {calls}\n"
        f"{body}\n"
    )
    script.chmod(0o755)
    return str(script), calls


def output_of(tmp_path: Path, text: str) -> str:
    path = tmp_path / "output.txt"
    path.write_text(text)
    return with_delimiter(str(path))


def test_it_asks_sacct_for_parsable_output_in_epoch_seconds(tmp_path: Path) -> None:
    program, calls = fake_sacct(tmp_path, output_of(tmp_path, COMPLETED_JOB))
    job = SacctAccounting(program).job("4242")
    assert job.jobid == "4242" and job.cpus_allocated == 2
    (call,) = calls.read_text().splitlines()
    assert re.fullmatch(r"%s --parsable2 --noheader --delimiter=\|[0-9a-f]{32}\| "
                        r"--format=JobID,JobIDRaw,\S+ --jobs 4242", call), call
    SacctAccounting(program).job("4242")
    delimiters = {re.search(r"--delimiter=(\S+)", c)[1]  # type: ignore[index]
                  for c in calls.read_text().splitlines()}
    assert len(delimiters) == 2  # a new one each call: no name written before it holds it


def test_it_says_a_job_accounting_does_not_know_is_unknown(tmp_path: Path) -> None:
    program, _ = fake_sacct(tmp_path, "exit 0")
    with pytest.raises(UnknownJob, match=r"^job 77 is unknown to accounting$"):
        SacctAccounting(program).job("77")


@pytest.mark.parametrize("jobid", ["", "12a", "1; rm -rf /", "123_[1-5]", "123.batch", "-1"])
def test_it_refuses_malformed_job_ids_without_running_sacct(tmp_path: Path, jobid: str) -> None:
    program, calls = fake_sacct(tmp_path, "exit 0")
    with pytest.raises(InvalidJobId, match="not a job id"):
        SacctAccounting(program).job(jobid)
    assert not calls.exists()


def test_it_quotes_the_last_line_of_a_failing_sacct(tmp_path: Path) -> None:
    program, _ = fake_sacct(tmp_path, "echo 'sacct: error: first' >&2\n"
                                      "echo 'sacct: error: Problem talking to the database: "
                                      "Connection refused' >&2\nexit 1")
    with pytest.raises(AccountingFailed) as failure:
        SacctAccounting(program).job("4242")
    assert str(failure.value) == ("sacct failed with exit status 1: sacct: error: Problem "
                                  "talking to the database: Connection refused")


def test_it_calls_garbage_a_failure_naming_the_line(tmp_path: Path) -> None:
    program, _ = fake_sacct(tmp_path, "echo 'this is not sacct output'")
    with pytest.raises(AccountingFailed, match="sacct line 1: 1 fields"):
        SacctAccounting(program).job("4242")


def test_it_gives_up_on_a_slow_sacct_within_its_timeout(tmp_path: Path) -> None:
    # The script's child keeps stdout open: the whole process group must go.
    program, _ = fake_sacct(tmp_path, "sleep 30 &\nsleep 30")
    started = time.monotonic()
    with pytest.raises(AccountingFailed, match=r"no answer within 0\.5 s"):
        SacctAccounting(program, timeout_s=0.5).job("4242")
    assert time.monotonic() - started < 5


def test_it_calls_a_missing_program_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="sacct program not found: /nonexistent/sacct"):
        SacctAccounting("/nonexistent/sacct").job("4242")
    not_executable = tmp_path / "sacct"
    not_executable.write_text("#!/bin/sh\n")
    with pytest.raises(ConfigError, match="not executable"):
        SacctAccounting(str(not_executable)).job("4242")


def test_it_lists_a_users_jobs_since_a_time(tmp_path: Path) -> None:
    program, calls = fake_sacct(tmp_path, output_of(tmp_path, COMPLETED_JOB))
    jobs = SacctAccounting(program).jobs_of_user("alice", SINCE)
    assert [j.jobid for j in jobs] == ["4242"]
    assert "--user alice --starttime " in calls.read_text()


def test_it_lists_only_jobs_that_ended_since_oldest_first(tmp_path: Path) -> None:
    output = "\n".join([
        line(JobID="3", JobIDRaw="3", End="1700000300"),
        line(JobID="1", JobIDRaw="1", End="1699990000"),  # ended before `since`
        line(JobID="2", JobIDRaw="2", End="1700000200"),
        line(JobID="4", JobIDRaw="4", State="RUNNING", End="Unknown"),
    ])
    program, calls = fake_sacct(tmp_path, output_of(tmp_path, output))
    since = datetime.fromtimestamp(1700000000, timezone.utc)
    assert [j.jobid for j in SacctAccounting(program).jobs_ended_since(since)] == ["2", "3"]
    assert "--allusers --starttime " in calls.read_text()


def test_it_keeps_its_environment_a_parameter(tmp_path: Path) -> None:
    program, calls = fake_sacct(tmp_path, "echo \"$SLURM_CONF\" >> " + str(tmp_path / "env"))
    with pytest.raises(UnknownJob):
        SacctAccounting(program, environ={"SLURM_CONF": "/etc/test/slurm.conf"}).job("1")
    assert (tmp_path / "env").read_text() == "/etc/test/slurm.conf\n"
    assert len(calls.read_text().splitlines()) == 1
