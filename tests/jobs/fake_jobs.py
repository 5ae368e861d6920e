"""Jobs on a fake tree (tests/jobs/fake_tree.py): an HTCondor slot's job process with the job
ad its environment names, and every kind of job the exporter knows at once."""

from __future__ import annotations

import os

from clusterwatch.jobs.exporter import JobsCollector
from tests.jobs.fake_nvml import UUID_0, UUID_1, FakeNvml
from tests.jobs.fake_tree import Tree, v1_slurm_job, v2_job

ODD = 'a"b\\c\nd'  # every character a label value or help text escapes
SLOT = "condor_var_lib_condor_execute_slot1_23@node1.example.org"
AD_PATH = "/var/lib/condor/execute/dir_4711/.job.ad"
AD = 'ClusterId = 1234\nProcId = 5\nOwner = "alice"\nAccountingGroup = "group_atlas.alice"\n'


def job_process(tree: Tree, pid: int, ad: str = AD) -> None:
    base = tree.process(pid, environ={
        "_CONDOR_JOB_AD": AD_PATH, "_CONDOR_SCRATCH_DIR": os.path.dirname(AD_PATH),
        "_CONDOR_AssignedGPUs": "GPU-604ac76c", "CUDA_VISIBLE_DEVICES": "GPU-604ac76c"})
    # The ad is read as the job sees it: through /proc/<pid>/root.
    ad_file = base / "root" / AD_PATH.lstrip("/")
    ad_file.parent.mkdir(parents=True)
    ad_file.write_text(ad)


def every_kind_of_job(tree: Tree) -> JobsCollector:
    """v1 with per-core CPU and GPUs (one without NVML readings), v2, SLUID, HTCondor, a job
    without processes, label values that need escaping, large and fractional numbers."""
    v1_slurm_job(tree, "42", tasks={"step_0/task_0": [101], "step_1/task_0": [102]},
                 usage_ns=123_456_789_012_345, cpus="0-3")
    tree.process(101, threads=3, rss_pages=123_457, io=(10**12, 7, 3, 1_000_001),
                 environ={"SLURM_JOB_ID": "42", "SLURM_JOB_GPUS": "10,11,12",
                          "SLURM_JOB_ACCOUNT": ODD, "SLURM_JOB_PARTITION": "gpu"})
    tree.process(102, threads=1)
    v1_slurm_job(tree, "43", uid=0)  # no process, root
    v2_job(tree, "system.slice/slurmstepd.scope", "job_44",
           tasks={"step_0/user/task_0": [103]}, cpu_usec=(1, 1, 0))
    tree.process(103, environ={"SLURM_JOB_ID": "44", "SLURM_JOB_ACCOUNT": "\u00e9t\u00e9"})
    v2_job(tree, "system.slice/slurmstepd.scope", "s8FXKTA79XAR00",
           tasks={"step_0/user/task_0": [104]})
    tree.process(104, environ={"SLURM_JOB_ID": "45"})
    v2_job(tree, "system.slice/htcondor", SLOT, tasks={"": [201]})
    job_process(tree, 201)
    return JobsCollector(tree.cgroup, tree.proc, nvml=FakeNvml([UUID_0, UUID_1],
                                                               broken={UUID_1}))
