"""A mass ending mailed by one `clusterwatch monitor usage_mail` run, through the installed
console script against a real SMTP server (aiosmtpd) on one SQLite file (issue 19, item 13):

- every email of the run goes over one SMTP connection (counted at the server), and each
  PDF is drawn once (the run says how many it drew and how many the render cache had);
- a connection the server drops between two emails (silently, or with a 421) is opened
  again once: every email arrives once, none is lost;
- SIGKILL mid-batch loses nothing: the emails sent are marked sent, the one in flight is
  sent again by a later run with the same Message-ID, the others are sent once.
"""

from __future__ import annotations

import os
import signal
import sqlite3
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Optional

import pytest

from clusterwatch.loopback.smtp import SmtpServer
from tests.monitor.usage.cli_support import Cli, finished
from tests.monitor.usage.mail_support import DOMAIN, started
from tests.monitor.usage.prometheus_range import RangePrometheus
from tests.monitor.usage.site import UsageSite
from tests.support.monitor_console import copy_migrated

JOBS = [str(jobid) for jobid in range(300, 308)]


@pytest.fixture
def batch_cli(tmp_path: Path, migrated_sqlite: Path) -> Iterator[Cli]:
    """The console script's environment with JOBS ended (their figures final) and queued by
    nobody yet: the next run's poll queues them all at once."""
    with RangePrometheus() as prometheus:
        server = started(SmtpServer())
        try:
            cli = Cli(tmp_path, UsageSite(tmp_path, prometheus), server)
            copy_migrated(migrated_sqlite, Path(cli.env["CLUSTERWATCH_DATA_DIR"]))
            for jobid in JOBS:
                cli.ended_job(jobid)
            yield cli
        finally:
            server.release()
            server.down()


def outbox(cli: Cli) -> dict[str, str]:
    with sqlite3.connect(Path(cli.env["CLUSTERWATCH_DATA_DIR"]) / "monitor.sqlite3") as db:
        return dict(db.execute("SELECT jobid, state FROM usage_usagemail").fetchall())


def received(server: SmtpServer) -> Counter[tuple[str, str]]:
    """(job, Message-ID) of every message the server took, with how often."""
    return Counter((str(m["X-Clusterwatch-Job"]), str(m["Message-ID"])) for m in server.messages)


def test_a_run_sends_every_email_over_one_smtp_connection(batch_cli: Cli) -> None:
    done = batch_cli.run("monitor", "usage_mail")
    assert done.returncode == 0, done.stderr
    assert sorted(done.stdout.splitlines()) == [f"job {j}: sent: to alice@{DOMAIN}" for j in JOBS]
    assert batch_cli.smtp.connections == 1
    assert sorted(job for job, _ in received(batch_cli.smtp)) == JOBS
    assert (
        f"usage_mail: {len(JOBS)} PDFs drawn, 0 from the render cache, over 1 SMTP "
        "connection" in done.stderr
    )


@pytest.mark.parametrize("answer", [None, "421 4.4.2 closing connection"], ids=["silently", "421"])
def test_a_connection_dropped_mid_batch_loses_and_duplicates_nothing(
    batch_cli: Cli, answer: Optional[str]
) -> None:
    batch_cli.smtp.drop_after(3, answer)
    done = batch_cli.run("monitor", "usage_mail")
    assert done.returncode == 0, done.stderr
    assert sorted(done.stdout.splitlines()) == [f"job {j}: sent: to alice@{DOMAIN}" for j in JOBS]
    got = received(batch_cli.smtp)
    assert sorted(job for job, _ in got) == JOBS and set(got.values()) == {1}
    assert batch_cli.smtp.connections == 2  # the first, and the one reopened once
    assert set(outbox(batch_cli).values()) == {"sent"}


def test_an_email_the_server_refuses_stays_queued_and_the_connection_serves_the_next(
    batch_cli: Cli,
) -> None:
    batch_cli.smtp.refuse("451 4.3.0 mailbox busy, try again later")
    done = batch_cli.run("monitor", "usage_mail")
    assert done.returncode == 0, done.stderr
    assert sorted(done.stdout.splitlines()) == [
        f"job {j}: retry: SMTP 451: 4.3.0 mailbox busy, try again later" for j in JOBS
    ]
    assert batch_cli.smtp.connections == 1 and batch_cli.smtp.messages == []
    assert set(outbox(batch_cli).values()) == {"pending"}
    batch_cli.smtp.refuse(None)
    with sqlite3.connect(Path(batch_cli.env["CLUSTERWATCH_DATA_DIR"]) / "monitor.sqlite3") as db:
        db.execute("UPDATE usage_usagemail SET next_attempt_at = '2000-01-01 00:00:00'")
    again = batch_cli.run("monitor", "usage_mail")
    assert sorted(job for job, _ in received(batch_cli.smtp)) == JOBS, again.stderr
    assert set(outbox(batch_cli).values()) == {"sent"}


def test_a_run_killed_mid_batch_loses_nothing_and_resends_only_the_email_in_flight(
    batch_cli: Cli,
) -> None:
    server = batch_cli.smtp
    server.hold(after=3)  # three emails answered, the fourth held: the kill comes then
    poller = batch_cli.start("monitor", "usage_mail")
    try:
        [in_flight] = server.wait_held(timeout=120)
    finally:
        os.kill(poller.pid, signal.SIGKILL)
        finished(poller)
        server.release()
    states = outbox(batch_cli)
    assert sorted(states) == JOBS  # every job queued before anything was sent
    assert Counter(states.values()) == {"sent": 3, "pending": len(JOBS) - 3}
    # The rows the killed run had claimed wait for their lease (10 minutes) to run out.
    with sqlite3.connect(Path(batch_cli.env["CLUSTERWATCH_DATA_DIR"]) / "monitor.sqlite3") as db:
        db.execute("UPDATE usage_usagemail SET claimed_until = '2000-01-01 00:00:00'")
    last = batch_cli.run("monitor", "usage_mail")
    assert last.returncode == 0, last.stderr
    assert set(outbox(batch_cli).values()) == {"sent"}
    got = received(server)
    twice = (str(in_flight["X-Clusterwatch-Job"]), str(in_flight["Message-ID"]))
    assert got == Counter({**{key: 1 for key in got}, twice: 2})
    assert sorted(job for job, _ in got) == JOBS
