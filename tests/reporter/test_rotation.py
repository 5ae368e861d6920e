"""Logs rotated more than once between two cron runs, read by the zipapp: every generation
newer than the position the previous run saved is counted, in order, numbered (NAME.1,
NAME.2.gz) or dated (NAME-20261001.gz); a file that can no longer be found is said, with
what was lost, in the record."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path
from typing import Any

from tests.support.harvester_host import Host
from tests.support.reporter_zipapp import run_app

from .main_support import FETCH_OK, newest_buffered


def fetch(minute: int) -> str:
    return FETCH_OK.format(t=f"2026-10-02 18:{minute:02d}:44")


def compress(path: Path) -> None:
    with path.open("rb") as plain, gzip.open(str(path) + ".gz", "wb") as packed:
        shutil.copyfileobj(plain, packed)
    path.unlink()


def started(tmp_path: Path, zipapp: Path) -> Host:
    host = Host(tmp_path)
    host.without_monitor()
    host.append(fetch(10) * 4)  # before the first run: not counted; a head of 256+ bytes
    assert run_app(zipapp, *host.args()).returncode == 2  # first run: positions
    return host


def report(host: Host, zipapp: Path) -> dict[str, Any]:
    done = run_app(zipapp, *host.args())
    assert done.returncode == 2, done.stderr
    return newest_buffered(host)


def test_it_counts_the_middle_file_of_two_numbered_rotations(tmp_path: Path,
                                                             zipapp: Path) -> None:
    host = started(tmp_path, zipapp)
    log = host.fetcher
    one, two = log.with_name(log.name + ".1"), log.with_name(log.name + ".2")
    host.append(fetch(20))
    log.rename(one)  # log -> log.1
    host.append(fetch(21))
    one.rename(two)  # log.1 -> log.2 -> log.2.gz, log -> log.1
    compress(two)
    log.rename(one)
    host.append(fetch(22))

    fetching = report(host, zipapp)["fetching"]
    assert fetching["queues"]["BNL_PanDA_1"]["attempts"] == 3
    assert fetching["read"]["rotated"] is True and fetching["read"]["rotated_files"] == 2
    assert "error" not in fetching["read"]


def test_it_counts_every_dated_generation(tmp_path: Path, zipapp: Path) -> None:
    host = started(tmp_path, zipapp)
    log = host.fetcher
    for day, minute in ((1, 20), (2, 21)):
        host.append(fetch(minute))
        dated = log.with_name(f"{log.name}-2026100{day}")
        log.rename(dated)
        compress(dated)
    host.append(fetch(22))

    fetching = report(host, zipapp)["fetching"]
    assert fetching["queues"]["BNL_PanDA_1"]["attempts"] == 3
    assert fetching["read"]["rotated_files"] == 2


def test_it_says_what_was_lost_when_the_file_read_last_is_gone(tmp_path: Path,
                                                               zipapp: Path) -> None:
    host = started(tmp_path, zipapp)
    log = host.fetcher
    one = log.with_name(log.name + ".1")
    host.append(fetch(20))  # in the file that will be gone
    log.rename(one)
    host.append(fetch(21))
    one.unlink()  # `rotate 1`, rotated again: the file read last is deleted
    log.rename(one)
    host.append(fetch(22))

    read = report(host, zipapp)["fetching"]
    assert read["queues"]["BNL_PanDA_1"]["attempts"] == 2  # the newer generation and live
    assert read["read"]["rotated_files"] == 1
    assert read["read"]["error"].startswith("rotated file not found: lines after byte ")
    assert "lost_bytes" in read["read"] and read["read"]["lost_bytes"] is None
