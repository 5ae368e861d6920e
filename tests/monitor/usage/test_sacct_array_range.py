"""The line sacct prints for an array's tasks not started yet (`500_[1-100%5]`) is a pending
job, not an unreadable line (issue 19 item 8 review): before, every poll while any array was
pending anywhere said "skipped a line accounting lists", and the user's list named it
unreadable. Its owner's list shows it pending; the poller never mails it."""

from __future__ import annotations

from datetime import datetime, timezone

from clusterwatch.monitor.usage.accounting.sacct_parse import ended_since, newest_start, parse_sacct
from tests.monitor.usage.cli_support import Cli
from tests.monitor.usage.mail_support import DOMAIN
from tests.monitor.usage.sacct_support import SEP, values

PENDING = values(
    JobID="500_[1-100%5]",
    JobIDRaw="500",
    State="PENDING",
    Start="Unknown",
    End="Unknown",
    MaxRSS="",
)
CANCELLED = values(JobID="501_[3,7-9]", JobIDRaw="501", State="CANCELLED by 1000")


def _output(*rows: list[str]) -> str:
    return "".join(SEP.join(row) + "\n" for row in rows)


def test_a_users_list_shows_an_arrays_pending_tasks_as_one_pending_job() -> None:
    listing = parse_sacct(_output(PENDING, values()), SEP, rank=newest_start, limit=10)
    assert listing.unreadable == []
    assert [(job.jobid, job.running) for job in listing] == [
        ("500_[1-100%5]", True),
        ("4242", False),
    ]


def test_the_poller_lists_no_range_of_tasks_even_ended() -> None:
    since = datetime(2000, 1, 1, tzinfo=timezone.utc)
    listing = parse_sacct(_output(CANCELLED, values()), SEP, rank=ended_since(since), limit=10)
    assert listing.unreadable == [] and [job.jobid for job in listing] == ["4242"]


def test_a_pending_array_anywhere_is_no_skipped_line_of_the_poller(mail_cli: Cli) -> None:
    cli = mail_cli
    cli.ended_job("10")
    cli.site.job("500_[1-100%5]", raw_id="500", running=True)
    done = cli.run("monitor", "usage_mail")
    assert done.returncode == 0, done.stderr
    assert "skipped" not in done.stderr and "unreadable" not in done.stderr, done.stderr
    assert done.stdout == f"job 10: sent: to alice@{DOMAIN}\n"
