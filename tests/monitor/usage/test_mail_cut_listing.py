"""The poller's cursor after a listing cut at its limit (issue 19, item 9's rule: never move
past a row that can heal): `clusterwatch monitor usage_mail --limit N` run as a subprocess
against the fake sacct, each job mailed once, none skipped, and no stall when more jobs than
the limit end in one second (a cancelled array: every task ends at once)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from tests.monitor.usage.cli_support import Cli


def _ended(cli: Cli, jobid: str, end: datetime) -> None:
    start = end - timedelta(minutes=15)
    cli.site.job(jobid, start=start, hours=0.25)
    cli.site.measured(jobid, start, end, busy_cpus=1.0, memory_bytes=200 * 1024**2)


def _mailed(cli: Cli, runs: int, limit: int) -> list[str]:
    sent: list[str] = []
    for _ in range(runs):
        done = cli.run("monitor", "usage_mail", "--limit", str(limit))
        assert done.returncode == 0, done.stderr
        sent += [line.split(":")[0].split()[1] for line in done.stdout.splitlines()]
    return sent


def test_a_cut_listing_moves_the_cursor_only_to_its_last_job(mail_cli: Cli) -> None:
    cli = mail_cli
    base = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(minutes=50)
    jobs = [str(100 + i) for i in range(5)]
    for i, jobid in enumerate(jobs):  # ended 50, 45, ... 30 minutes ago
        _ended(cli, jobid, base + timedelta(minutes=5 * i))
    first = cli.run("monitor", "usage_mail", "--limit", "3")
    assert first.returncode == 0, first.stderr
    assert "more to list next run" in first.stderr
    assert sorted(line.split(":")[0] for line in first.stdout.splitlines()) == [
        "job 100",
        "job 101",
        "job 102",
    ]  # the earliest ended
    sent = [line.split(":")[0].split()[1] for line in first.stdout.splitlines()]
    sent += _mailed(cli, 1, 3)
    assert sorted(sent) == jobs  # each once, none skipped
    assert len(cli.smtp.wait_for(5, timeout=2)) == 5


def test_more_jobs_ending_in_one_second_than_the_limit_do_not_stall_the_poller(
    mail_cli: Cli,
) -> None:
    cli = mail_cli
    end = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(minutes=40)
    tied = [f"200_{task}" for task in range(4)]  # a cancelled array: one end for all
    for jobid in tied:
        _ended(cli, jobid, end)
    _ended(cli, "201", end + timedelta(minutes=5))
    sent = _mailed(cli, 3, 2)
    assert sorted(sent) == sorted([*tied, "201"])
    assert len(cli.smtp.wait_for(5, timeout=2)) == 5


def test_the_limit_must_be_a_positive_number(mail_cli: Cli) -> None:
    cli = mail_cli
    for bad in ("0", "-1", "x"):
        done = cli.run("monitor", "usage_mail", "--limit", bad)
        assert done.returncode == 2 and "--limit" in done.stderr, done.stderr
