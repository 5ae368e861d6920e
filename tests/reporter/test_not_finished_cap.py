"""The not-finished workers the reporter reads are capped (the newest 2,000 of the 24 hours):
the record says how many it read and whether more did not finish, so the grouped counts are
never short without saying so. Through the built zipapp, on a harvester schema of its own."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from clusterwatch.loopback.mariadb import MariaDB, create_harvester_schema
from clusterwatch.reporter.harvester_db import CANDIDATE_LIMIT
from tests.support.harvester_db import PASSWORD, USER, insert, worker, write_cfg
from tests.support.harvester_host import Host
from tests.support.reporter_zipapp import run_app

from .main_support import validate


def ended(seconds_ago: int) -> str:
    # The zipapp runs on the real clock: its 24 hours end now.
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(time.time() - seconds_ago))


def schema_with_failures(db: MariaDB, name: str, workers: int) -> None:
    """`workers` failed workers of BNL, worker n ended n minutes-and-a-bit ago (1 newest);
    the even ones were held, the odd ones removed."""
    create_harvester_schema(db, name, USER, PASSWORD)
    rows = [
        worker(n, "BNL", "failed", ended(120 + 30 * n), diag="held" if n % 2 == 0 else "removed")
        for n in range(1, workers + 1)
    ]
    db.sql(insert("work_table", rows), name)


@pytest.mark.parametrize(
    ("workers", "reached"), [(CANDIDATE_LIMIT, False), (CANDIDATE_LIMIT + 3, True)]
)
def test_it_says_when_more_workers_did_not_finish_than_it_reads(
    tmp_path: Path, zipapp: Path, mariadb_scratch: MariaDB, workers: int, reached: bool
) -> None:
    schema = f"HARVESTER_CAP_{workers}"
    schema_with_failures(mariadb_scratch, schema, workers)
    host = Host(tmp_path)
    cfg = write_cfg(tmp_path, port=str(mariadb_scratch.port), schema=schema, user=USER)
    args = [a if a != str(tmp_path / "no.cfg") else cfg for a in host.args("--print")]
    done = run_app(zipapp, *args)
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    validate(record)
    db = record["harvester_db"]

    assert db["workers_not_finished_read"] == {
        "window_s": 86400,
        "workers": CANDIDATE_LIMIT,
        "limit": CANDIDATE_LIMIT,
        "limit_reached": reached,
    }
    # The newest 2,000 either way (workers 1-2000), grouped exactly; 2001-2003 are not read.
    grouped = {
        reason: (group["count"], [ex["worker"] for ex in group["examples"]])
        for reason, group in db["workers_not_finished"]["BNL"]["reasons"].items()
    }
    assert db["workers_not_finished"]["BNL"]["workers"] == CANDIDATE_LIMIT
    assert grouped == {"held": (1000, [2, 4, 6]), "removed": (1000, [1, 3, 5])}
