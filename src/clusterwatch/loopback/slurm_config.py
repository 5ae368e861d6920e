"""The configuration files of the test Slurm cluster (`loopback/slurm.py`), as pure text.

Each non-obvious setting says why: these are what it took for slurmctld, slurmd and munged
from Debian's packages to run jobs in real cgroup v1 directories on one loopback machine.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

# The v1 controllers Slurm's task/cgroup and jobacct_gather/cgroup use, and the exporter reads.
V1_CONTROLLERS = ("cpuacct", "cpuset", "memory", "freezer")


@dataclass(frozen=True)
class ClusterSettings:
    workdir: Path
    cluster_name: str
    node_name: str
    partition: str
    cgroup_root: Path
    ctld_port: int
    slurmd_port: int
    hardware: str  # "CPUs=2 Boards=1 ... RealMemory=22899", as slurmd -C reports
    first_job_id: int
    jobs_per_core: int
    accounting_port: Optional[int] = None  # slurmdbd's port (loopback/slurmdbd.py); None: none


def slurm_conf(s: ClusterSettings) -> str:
    w = s.workdir
    return f"""\
ClusterName={s.cluster_name}
# slurmctld accepts "localhost" as its own name, whatever the machine's hostname is.
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={s.ctld_port}
SlurmdPort={s.slurmd_port}
AuthType=auth/munge
CredType=cred/munge
# Our own munged: the system's (/run/munge) is not running, and would have another key.
AuthInfo=socket={w / 'munge' / 'munge.socket'}
SlurmUser=root
SlurmdUser=root
StateSaveLocation={w / 'state'}
SlurmdSpoolDir={w / 'spool' / 'slurmd_%n'}
SlurmctldPidFile={w / 'slurmctld.pid'}
SlurmdPidFile={w / 'slurmd_%n.pid'}
SlurmctldLogFile={w / 'log' / 'slurmctld.log'}
SlurmdLogFile={w / 'log' / 'slurmd.log'}
# Empty: /etc/slurm/plugstack.conf would load the system's SPANK plugins.
PlugStackConfig={w / 'plugstack.conf'}
MailProg=/bin/true
MpiDefault=none
FirstJobId={s.first_job_id}
ProctrackType=proctrack/cgroup
TaskPlugin=task/cgroup
# Also gives each job a cpuacct cgroup (without it: cpuset, memory and freezer only).
JobAcctGatherType=jobacct_gather/cgroup
JobAcctGatherFrequency=task=5
{_accounting(s)}JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
ReturnToService=2
InactiveLimit=0
KillWait=5
# Ended jobs stay known to scontrol for 5 minutes: wait_done reads their final state.
MinJobAge=300
# Debian's 22.05 build puts the job cgroups under slurm_<NodeName>/, not slurm/.
NodeName={s.node_name} NodeAddr=127.0.0.1 NodeHostname=localhost {s.hardware} State=UNKNOWN
# FORCE:n lets n jobs share a core, so a 2-core machine runs several one-core test jobs.
PartitionName={s.partition} Nodes={s.node_name} Default=YES MaxTime=INFINITE \
OverSubscribe=FORCE:{s.jobs_per_core} State=UP
"""


def _accounting(s: ClusterSettings) -> str:
    if s.accounting_port is None:
        return "AccountingStorageType=accounting_storage/none\n"
    return f"""\
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort={s.accounting_port}
# The munge socket for talking to slurmdbd: AuthInfo's is not used for it (clients would
# try the system's /run/munge socket).
AccountingStoragePass={s.workdir / 'munge' / 'munge.socket'}
# Registers gres/gpu as a TRES even without GPUs: the view's GPU column has an id to name.
AccountingStorageTRES=gres/gpu
"""


def cgroup_conf(s: ClusterSettings) -> str:
    return f"""\
# Explicit: the host also mounts a cgroup2 hierarchy (unified/), which must not be picked.
CgroupPlugin=cgroup/v1
CgroupMountpoint={s.cgroup_root}
# The controllers are mounted already: Slurm must not try to mount them.
CgroupAutomount=no
ConstrainCores=yes
ConstrainRAMSpace=yes
"""


def v1_controllers(mounts: str, cgroup_root: Path) -> set[str]:
    """The cgroup v1 hierarchies mounted right under `cgroup_root`, from /proc/self/mounts.

    Each by directory name and by controller, so co-mounted `cpu,cpuacct` gives both
    `cpu,cpuacct` and `cpuacct` (distributions add a `cpuacct` symlink).
    """
    found: set[str] = set()
    for line in mounts.splitlines():
        fields = line.split()
        if len(fields) < 4 or fields[2] != "cgroup" or Path(fields[1]).parent != cgroup_root:
            continue
        found.add(Path(fields[1]).name)
        found.update(option for option in fields[3].split(",") if option in V1_CONTROLLERS)
    return found
