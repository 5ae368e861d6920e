"""What the Slurm harness's configuration tests share: a cluster's settings in a directory,
and a configuration file read back as `Key=value` pairs."""

from __future__ import annotations

from pathlib import Path

from clusterwatch.loopback.slurm import ClusterSettings


def settings(tmp_path: Path) -> ClusterSettings:
    return ClusterSettings(
        workdir=tmp_path, cluster_name="cwtest", node_name="cwn1", partition="cw",
        cgroup_root=Path("/sys/fs/cgroup"), ctld_port=40001, slurmd_port=40002,
        hardware="CPUs=2 RealMemory=1000", first_job_id=100_100, jobs_per_core=4)


def conf_lines(text: str) -> dict[str, str]:
    """`Key=value` of each line that is not a comment, continuation lines joined."""
    joined = text.replace("\\\n", "")
    return {line.split("=", 1)[0]: line.split("=", 1)[1]
            for line in joined.splitlines() if line and not line.startswith("#")}
