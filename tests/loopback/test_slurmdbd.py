"""The test cluster's accounting: slurm.conf and slurmdbd.conf, missing parts, and (as root,
with cgroup v1) a real slurmdbd on a private MariaDB that `sacct` reads."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from clusterwatch.loopback import slurm, slurmdbd
from clusterwatch.loopback.mariadb import MariaDBMissing
from clusterwatch.loopback.services import MissingComponent
from clusterwatch.loopback.slurm import ClusterSettings, SlurmCluster
from tests.support.slurm_prerequisites import require_slurm

from .slurm_conf_support import conf_lines, settings


def test_it_leaves_accounting_off_unless_asked(tmp_path: Path) -> None:
    conf = conf_lines(slurm.slurm_conf(settings(tmp_path)))
    assert conf["AccountingStorageType"] == "accounting_storage/none"
    assert "AccountingStoragePort" not in conf


def test_it_points_slurmctld_and_the_clients_at_slurmdbd(tmp_path: Path) -> None:
    with_dbd = ClusterSettings(**{**settings(tmp_path).__dict__, "accounting_port": 40003})
    conf = conf_lines(slurm.slurm_conf(with_dbd))
    assert conf["AccountingStorageType"] == "accounting_storage/slurmdbd"
    assert (conf["AccountingStorageHost"], conf["AccountingStoragePort"]) == ("localhost",
                                                                              "40003")
    # The clients' munge socket for slurmdbd: without it sacct tries the system's.
    assert conf["AccountingStoragePass"] == str(tmp_path / "munge" / "munge.socket")
    assert conf["JobAcctGatherType"] == "jobacct_gather/cgroup"


def test_its_slurmdbd_conf_stores_in_mariadb_over_loopback(tmp_path: Path) -> None:
    text = slurmdbd.slurmdbd_conf(
        munge_socket=tmp_path / "munge.socket", port=40004, run_dir=tmp_path, user="slurm",
        storage_port=40005, storage_password="s3cret")
    conf = conf_lines(text)
    assert conf["StorageType"] == "accounting_storage/mysql"
    assert (conf["StorageHost"], conf["StoragePort"]) == ("127.0.0.1", "40005")
    assert (conf["DbdAddr"], conf["DbdPort"]) == ("127.0.0.1", "40004")
    assert conf["StoragePass"] == "s3cret" and conf["SlurmUser"] == "slurm"
    assert conf["AuthInfo"] == f"socket={tmp_path / 'munge.socket'}"


def test_a_missing_slurmdbd_names_its_debian_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setattr(slurm, "_SBIN", ("/nonexistent",))
    with pytest.raises(MissingComponent,
                       match="apt-get install --no-install-recommends slurmdbd"):
        slurmdbd.check_accounting_binaries(slurm.find_binary)


def test_a_missing_mariadb_is_a_missing_component(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_mariadb() -> tuple[str, str, str]:
        raise MariaDBMissing("mariadbd not found; install it with: apt-get install mariadb")

    monkeypatch.setattr(slurmdbd, "binaries", no_mariadb)
    with pytest.raises(MissingComponent, match="mariadbd not found on PATH; install it"):
        slurmdbd.check_accounting_binaries(lambda name: f"/usr/bin/{name}")


def test_without_accounting_the_cluster_says_so() -> None:
    with pytest.raises(RuntimeError, match="accounting=True adds it"):
        _ = SlurmCluster().accounting


# --- a real cluster with accounting (root, cgroup v1) ------------------------------------


@pytest.fixture
def can_run_accounting() -> None:
    require_slurm(accounting=True)


def process_uid(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("Uid:")).split()[1])


@pytest.mark.integration
@pytest.mark.usefixtures("can_run_accounting")
def test_it_accounts_jobs_through_slurmdbd_and_leaves_nothing_running() -> None:
    started = time.monotonic()
    with SlurmCluster(accounting=True) as cluster:
        startup_s = time.monotonic() - started
        accounting = cluster.accounting
        conf = cluster.workdir / "slurmdbd.conf"
        assert conf.stat().st_mode & 0o777 == 0o600
        assert conf.stat().st_uid == process_uid(os.getpid()) == 0  # SlurmUser=root
        assert accounting._dbd is not None
        dbd_pid, db_pid = accounting._dbd.pid, accounting.database.process.pid
        assert process_uid(dbd_pid) == 0

        accounting.add_user("cwjobother", "cwother")
        mine = cluster.submit("exit 0", mem="50M", job_name="mine")
        theirs = cluster.submit("exit 0", mem="50M", user="cwjobother", job_name="theirs")
        for jobid in (mine, theirs):
            assert cluster.wait_done(jobid) == "COMPLETED"
            assert accounting.wait_accounted(jobid)["State"] == "COMPLETED"
        listed = subprocess.run(
            [accounting.sacct_program, "-a", "-X", "-n", "-P", "--format=JobID,User,Account"],
            env={"PATH": os.environ["PATH"]}, capture_output=True, text=True, check=True)
        rows = {line.split("|")[0]: line.split("|")[1:] for line in listed.stdout.split()}
        assert rows[str(mine)] == [slurm.DEFAULT_JOB_USER, slurmdbd.ACCOUNT]
        assert rows[str(theirs)] == ["cwjobother", "cwother"]
        tables = accounting.database.sql("SHOW TABLES;", slurmdbd.DATABASE).split()
        assert f"{cluster.cluster_name}_job_table" in tables
        workdir = cluster.workdir
    print(f"start-up with accounting: {startup_s:.1f} s")
    assert not workdir.exists()
    for pid in (dbd_pid, db_pid):
        assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(
            f"/proc/{pid}/status").read_text()
