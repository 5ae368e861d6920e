"""Harvester hosts sharing one home directory, each running the zipapp from cron with the
default options: each keeps a state directory of its own, whatever order they start in, and
a host whose state is already in the unsuffixed `~/.swf-harvester-reporter/` keeps it.

Each run is the built zipapp under a hostname of its own (a UTS namespace), so the key is the
short hostname as on the real hosts; the hosts' log directories are their own, the home and
its env file are shared."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from clusterwatch.reporter.buffer import Buffer
from tests.components import unavailable
from tests.support.reporter_zipapp import host_namespaces, run_app_on_host

from .main_support import FETCH_OK, validate

ONE, TWO = "pandaharvester01", "pandaharvester02"
SHARED = ".swf-harvester-reporter"


@pytest.fixture(scope="module")
def namespaces() -> None:
    why = host_namespaces()
    if why is not None:
        unavailable(why)


class SharedHome:
    """Hosts with their own log directories and one home (the env file names no monitor,
    so each run buffers its record and exits 2)."""

    def __init__(self, root: Path, app: Path) -> None:
        self.root, self.app = root, app
        self.home = root / "home"
        self.home.mkdir()
        env = self.home / ".swf-harvester-reporter.env"
        env.write_text("")
        env.chmod(0o600)

    def logs(self, host: str) -> Path:
        where = self.root / host / "log"
        if not where.exists():
            where.mkdir(parents=True)
            for name in (
                "job_fetcher",
                "submitter",
                "worker_adjuster",
                "communicator",
                "propagator",
            ):
                (where / f"panda-{name}.log").write_text("")
        return where

    def append(self, host: str, lines: int, minute: int) -> None:
        # Each host's own times (to the millisecond on a real host): its log's head is its own.
        second = 10 if host == ONE else 20
        with (self.logs(host) / "panda-job_fetcher.log").open("a") as handle:
            for n in range(lines):
                handle.write(FETCH_OK.format(t=f"2026-10-02 18:{minute:02d}:{second + n:02d}"))

    def run(self, host: str, *extra: str) -> None:
        done = run_app_on_host(
            self.app,
            host,
            self.home,
            "--log-dir",
            str(self.logs(host)),
            "--harvester-cfg",
            str(self.root / "no.cfg"),
            "--queue-config",
            str(self.root / "no.json"),
            *extra,
        )
        assert done.returncode == 2, done.stderr  # buffered: no monitor configured
        assert "Traceback" not in done.stderr

    def state_dirs(self) -> list[Path]:
        return sorted(path for path in self.home.glob(SHARED + "*") if path.is_dir())

    def records(self) -> dict[str, list[tuple[str, dict[str, Any]]]]:
        """Every buffered record, by the state directory it is in: (its host, the record)."""
        found: dict[str, list[tuple[str, dict[str, Any]]]] = {}
        for directory in self.state_dirs():
            buffer = Buffer(str(directory))
            for name in buffer.names():
                record = json.loads(buffer.read(name))
                validate(record)
                found.setdefault(directory.name, []).append((record["host"], record))
        return found


def attempts(record: dict[str, Any]) -> int:
    queue = record["fetching"].get("queues", {}).get("BNL_PanDA_1", {})
    found: int = queue.get("attempts", 0)
    return found


@pytest.mark.parametrize("order", [(ONE, TWO), (TWO, ONE)], ids=["01-first", "02-first"])
def test_it_gives_each_host_of_a_shared_home_its_own_state(
    tmp_path: Path, zipapp: Path, namespaces: None, order: tuple[str, str]
) -> None:
    home = SharedHome(tmp_path, zipapp)
    for host in order:
        home.append(host, 4, 20)
    for host in order:
        home.run(host)  # first runs: positions only
    home.append(ONE, 5, 21)
    home.append(TWO, 3, 21)
    for host in order:
        home.run(host)

    by_dir = home.records()
    assert sorted(by_dir) == [SHARED, f"{SHARED}-{TWO}"]  # 01 has the original's directory
    for directory, records in by_dir.items():
        hosts = {host for host, _ in records}
        assert len(hosts) == 1, (directory, hosts)  # never another host's buffer
        first, second = (record for _, record in records)
        assert first["interval"]["first_run"] is True and attempts(first) == 0
        assert second["interval"]["first_run"] is False
        assert attempts(second) == {ONE: 5, TWO: 3}[hosts.pop()]
    assert json.loads((home.home / SHARED / "owner").read_text()) == {"key": ONE}


@pytest.mark.parametrize(("owner", "other"), [(TWO, ONE), (ONE, TWO)])
def test_a_host_keeps_the_state_it_already_has_in_the_unsuffixed_directory(
    tmp_path: Path, zipapp: Path, namespaces: None, owner: str, other: str
) -> None:
    """A reporter before the owner mark left `owner`'s state there, unmarked: `owner`
    keeps it and counts on from its positions; the other host (even pandaharvester01, whose
    directory the original design made it) starts in its own, though it runs first."""
    home = SharedHome(tmp_path, zipapp)
    home.append(owner, 4, 20)
    home.append(other, 4, 20)
    home.run(owner, "--state", str(home.home / SHARED))  # the old layout: no mark
    assert not (home.home / SHARED / "owner").exists()
    home.append(owner, 5, 21)

    home.run(other)
    home.run(owner)

    by_dir = home.records()
    assert sorted(by_dir) == [SHARED, f"{SHARED}-{other}"]
    assert [host for host, _ in by_dir[SHARED]] == [owner, owner]
    kept = by_dir[SHARED][-1][1]
    assert kept["interval"]["first_run"] is False and attempts(kept) == 5
    ((host, fresh),) = by_dir[f"{SHARED}-{other}"]
    assert host == other and fresh["interval"]["first_run"] is True
    assert json.loads((home.home / SHARED / "owner").read_text()) == {"key": owner}


def test_print_claims_no_directory(tmp_path: Path, zipapp: Path, namespaces: None) -> None:
    home = SharedHome(tmp_path, zipapp)
    done = run_app_on_host(
        zipapp,
        ONE,
        home.home,
        "--print",
        "--log-dir",
        str(home.logs(ONE)),
        "--harvester-cfg",
        str(tmp_path / "no.cfg"),
        "--queue-config",
        str(tmp_path / "no.json"),
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["host"] == ONE
    assert home.state_dirs() == []  # nothing stored, nothing claimed
