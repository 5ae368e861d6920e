"""The Slurm test harness: its configuration, its checks, and (as root) its clean stop."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from clusterwatch.loopback import slurm
from clusterwatch.loopback.services import MissingComponent, ServiceStartError
from clusterwatch.loopback.slurm import SlurmCluster, SlurmUnavailable
from tests.components import unavailable

from .slurm_conf_support import conf_lines, settings

HYBRID_MOUNTS = """\
tmpfs /sys/fs/cgroup tmpfs rw,relatime,mode=755 0 0
cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,nosuid,cpu,cpuacct 0 0
cgroup /sys/fs/cgroup/cpuset cgroup rw,relatime,cpuset 0 0
cgroup /sys/fs/cgroup/memory cgroup rw,relatime,memory 0 0
cgroup /sys/fs/cgroup/freezer cgroup rw,relatime,freezer 0 0
cgroup /sys/fs/cgroup/systemd cgroup rw,relatime,name=systemd 0 0
cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0
cgroup /elsewhere/pids cgroup rw,relatime,pids 0 0
"""


def test_the_slurm_conf_has_the_plugins_the_issue_asks_for(tmp_path: Path) -> None:
    conf = conf_lines(slurm.slurm_conf(settings(tmp_path)))
    assert conf["ProctrackType"] == "proctrack/cgroup"
    assert conf["TaskPlugin"] == "task/cgroup"
    assert conf["JobAcctGatherType"] == "jobacct_gather/cgroup"
    assert conf["SelectType"] == "select/cons_tres"
    assert conf["SelectTypeParameters"] == "CR_Core_Memory"
    assert conf["AuthType"] == "auth/munge"
    assert conf["AuthInfo"] == f"socket={tmp_path / 'munge' / 'munge.socket'}"
    assert conf["SlurmctldHost"] == "localhost(127.0.0.1)"
    assert (conf["SlurmctldPort"], conf["SlurmdPort"]) == ("40001", "40002")
    assert conf["NodeName"].startswith("cwn1 NodeAddr=127.0.0.1 ")
    assert "CPUs=2 RealMemory=1000" in conf["NodeName"]
    assert conf["PartitionName"].startswith("cw Nodes=cwn1 ")
    assert "OverSubscribe=FORCE:4" in conf["PartitionName"]
    for key in ("StateSaveLocation", "SlurmdSpoolDir", "PlugStackConfig"):
        assert conf[key].startswith(str(tmp_path)), key


def test_every_file_and_socket_of_a_cluster_is_in_its_own_directory(tmp_path: Path) -> None:
    # Several clusters at once (pytest-xdist workers) share nothing but the cgroup mounts.
    conf = conf_lines(slurm.slurm_conf(settings(tmp_path)))
    paths = {key: value.split("=", 1)[-1] for key, value in conf.items()
             if value.split("=", 1)[-1].startswith("/")}
    assert set(paths) >= {"AuthInfo", "StateSaveLocation", "SlurmdSpoolDir",
                          "SlurmctldPidFile", "SlurmdPidFile", "SlurmctldLogFile",
                          "SlurmdLogFile", "PlugStackConfig"}
    outside = {key: path for key, path in paths.items() if not path.startswith(str(tmp_path))}
    assert outside == {"MailProg": "/bin/true"}


def test_two_clusters_of_one_process_get_their_own_node_names_and_job_ids() -> None:
    first, second = SlurmCluster(), SlurmCluster()
    assert first.node_name != second.node_name  # their own slurm_<node> cgroup directories
    assert {first.node_name[:len(f"cwn{os.getpid()}")],
            second.node_name[:len(f"cwn{os.getpid()}")]} == {f"cwn{os.getpid()}"}
    # 100 job IDs of its own per cluster: 4 per process, neighbouring pids (xdist workers).
    starts = sorted(slurm.first_job_id(pid, number) for pid in (4100, 4101, 4102)
                    for number in range(4))
    assert all(later - earlier >= 100 for earlier, later in zip(starts, starts[1:]))
    highest = max(slurm.first_job_id(pid, 3) for pid in range(164_990, 165_010))
    assert highest + 100 < 67_043_328  # Slurm's default MaxJobId


def test_the_cgroup_conf_asks_for_v1_and_constrains_cores_and_memory(tmp_path: Path) -> None:
    conf = conf_lines(slurm.cgroup_conf(settings(tmp_path)))
    assert conf == {
        "CgroupPlugin": "cgroup/v1", "CgroupMountpoint": "/sys/fs/cgroup",
        "CgroupAutomount": "no", "ConstrainCores": "yes", "ConstrainRAMSpace": "yes",
    }


def test_it_finds_v1_hierarchies_by_name_and_by_controller() -> None:
    found = slurm.v1_controllers(HYBRID_MOUNTS, Path("/sys/fs/cgroup"))
    assert found == {"cpu,cpuacct", "cpuacct", "cpuset", "memory", "freezer", "systemd"}


def test_it_is_unavailable_without_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(slurm, "find_binary", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(SlurmUnavailable, match="needs root"):
        slurm.check_prerequisites()


def test_it_is_unavailable_without_cgroup_v1(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(slurm, "find_binary", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    with pytest.raises(SlurmUnavailable, match="no cgroup v1 hierarchy for cpuacct"):
        slurm.check_prerequisites(tmp_path)


def test_a_missing_daemon_names_its_debian_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setattr(slurm, "_SBIN", ("/nonexistent",))
    with pytest.raises(MissingComponent, match="apt-get install --no-install-recommends munge"):
        slurm.check_prerequisites()


# --- a real cluster (root, cgroup v1) --------------------------------------------------


@pytest.fixture
def can_run_a_cluster() -> None:
    try:
        slurm.check_prerequisites()
    except MissingComponent as missing:
        unavailable(missing)
    except SlurmUnavailable as reason:
        pytest.skip(str(reason))


@pytest.mark.integration
@pytest.mark.usefixtures("can_run_a_cluster")
def test_stop_leaves_no_job_process_cgroup_or_file_behind() -> None:
    with SlurmCluster() as cluster:
        # A job that ignores SIGTERM: the stop must still end it.
        jobid = cluster.submit("trap '' TERM; sleep 3600 & wait; sleep 3600", mem="50M")
        cluster.wait_running(jobid)
        job_dir = cluster.wait_cgroup(jobid, "freezer")
        assert job_dir.is_dir()
        assert cluster.job_state(jobid) == "RUNNING"
        tops = [cluster.cgroup_root / c / f"slurm_{cluster.node_name}"
                for c in slurm.V1_CONTROLLERS]
        workdir = cluster.workdir
        daemons = list(cluster._daemons.values())
    assert not [top for top in tops if top.exists()]
    assert not workdir.exists()
    assert all(process.poll() is not None for process in daemons)
    user_processes = subprocess.run(["pgrep", "-u", slurm.DEFAULT_JOB_USER, "-f", "sleep 3600"],
                                    capture_output=True, text=True, check=False).stdout
    assert user_processes == ""


@pytest.mark.integration
@pytest.mark.usefixtures("can_run_a_cluster")
def test_a_node_that_never_becomes_idle_fails_with_the_daemons_logs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # More memory than the machine has: slurmctld refuses the node's registration.
    monkeypatch.setattr(slurm, "_hardware", lambda: "CPUs=1 RealMemory=999999999")
    with pytest.raises(ServiceStartError) as failure:
        SlurmCluster(startup_timeout=5).start()
    message = str(failure.value)
    assert "slurmd did not start: node not idle within 5 s" in message
    assert "--- slurmctld ---" in message and "--- slurmd ---" in message
    assert "Low RealMemory" in message  # slurmctld says why
