"""What docs/usage.md promises of the end-of-job email when the poller dies or runs twice,
through the console script on one SQLite file and a real SMTP server (aiosmtpd):

- SIGKILL after the server took the message, before its "250": the email is not lost; the
  row stays claimed for CLAIM_LEASE (another run leaves it alone), and once the lease has
  run out the next run sends it again, with the same Message-ID ("once per job, never lost":
  the rare copy sent twice is recognisably the same message);
- two pollers at once: every job mailed once, both runs exit 0 (no "database is locked").
"""

from __future__ import annotations

import os
import signal
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from clusterwatch.loopback.smtp import SmtpServer
from tests.monitor.usage.cli_support import Cli, finished
from tests.monitor.usage.mail_support import started
from tests.monitor.usage.prometheus_range import RangePrometheus
from tests.monitor.usage.site import UsageSite
from tests.support.monitor_console import copy_migrated


class HeldSmtpServer(SmtpServer):
    """Keeps each message, then holds its answer to DATA until `release()` (no time limit:
    `down()` drops what is still held)."""

    def __init__(self) -> None:
        super().__init__()
        self.hold()


@pytest.fixture
def held_cli(tmp_path: Path, migrated_sqlite: Path) -> Iterator[Cli]:
    with RangePrometheus() as prometheus:
        server = started(HeldSmtpServer())
        try:
            cli = Cli(tmp_path, UsageSite(tmp_path, prometheus), server)
            copy_migrated(migrated_sqlite, Path(cli.env["CLUSTERWATCH_DATA_DIR"]))
            yield cli
        finally:
            server.release()
            server.down()


def outbox(cli: Cli) -> list[tuple[str, str, int]]:
    with sqlite3.connect(Path(cli.env["CLUSTERWATCH_DATA_DIR"]) / "monitor.sqlite3") as db:
        return db.execute("SELECT jobid, state, claimed_until IS NOT NULL FROM usage_usagemail"
                          " ORDER BY jobid").fetchall()


def expire_claims(cli: Cli) -> None:
    """What ten minutes do to a dead run's claim."""
    with sqlite3.connect(Path(cli.env["CLUSTERWATCH_DATA_DIR"]) / "monitor.sqlite3") as db:
        db.execute("UPDATE usage_usagemail SET claimed_until = '2000-01-01 00:00:00'")


def test_a_poller_killed_mid_send_loses_nothing_and_sends_again_with_the_same_id(
        held_cli: Cli) -> None:
    server = held_cli.smtp
    assert isinstance(server, HeldSmtpServer)
    held_cli.ended_job("10")
    poller = held_cli.start("monitor", "usage_mail")
    try:
        [taken] = server.wait_held(timeout=120)  # the message taken, its "250" not given
    finally:
        os.kill(poller.pid, signal.SIGKILL)
        finished(poller)
        server.release()
    assert outbox(held_cli) == [("10", "pending", 1)]
    # Within the lease another run leaves the row alone: nothing sent, nothing lost.
    again = held_cli.run("monitor", "usage_mail")
    assert again.returncode == 0 and again.stdout == "", again.stderr
    assert outbox(held_cli) == [("10", "pending", 1)]
    expire_claims(held_cli)
    last = held_cli.run("monitor", "usage_mail")
    assert (last.returncode, last.stdout.strip()) == (0, "job 10: sent: to alice@example.org")
    first, second = server.wait_for(2, timeout=5)
    assert first["Message-ID"] == second["Message-ID"] == taken["Message-ID"]
    assert outbox(held_cli) == [("10", "sent", 0)]


def test_two_pollers_at_once_mail_each_job_once(held_cli: Cli) -> None:
    server = held_cli.smtp
    assert isinstance(server, HeldSmtpServer)
    server.release()
    jobs = [str(jobid) for jobid in range(20, 26)]
    for jobid in jobs:
        held_cli.ended_job(jobid)
    runs = [held_cli.start("monitor", "usage_mail") for _ in range(2)]
    results = [finished(run) for run in runs]
    assert [r.returncode for r in results] == [0, 0], [r.stderr for r in results]
    # Both exited 0, so every message they sent had its "250": all are here, a copy too.
    received = sorted(m["Subject"].split()[1] for m in server.wait_for(len(jobs)))
    assert received == jobs
    assert {state for _, state, _ in outbox(held_cli)} == {"sent"}
