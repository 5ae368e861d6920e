"""Who a job is: job ID, uid, account, partition and GPUs, from one job process's environment.

Pure parsing of an environment mapping (and of HTCondor's job ad). The environment is what
the process was started with and the user controls it, so a job ID in the cgroup path always
wins; the environment only fills what the path lacks (a SLUID's job ID, HTCondor's job ID)
and the metadata (account, partition, GPUs).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Callable, Optional

# What the exporter reads from an environment; nothing else is decoded.
ENV_PREFIXES = (b"SLURM_", b"_CONDOR_", b"CUDA_VISIBLE_DEVICES=")
SLURM_MARKER = "SLURM_JOB_ID"
CONDOR_MARKERS = ("_CONDOR_JOB_AD", "_CONDOR_SCRATCH_DIR")
# GPU assignment, most trustworthy first. SLURM_JOB_GPUS holds host-wide GPU numbers;
# CUDA_VISIBLE_DEVICES and GPU_DEVICE_ORDINAL are renumbered from 0 inside a job with
# ConstrainDevices, so they are used only when they name GPUs by UUID.
_GPU_UUID = re.compile(r"(?:GPU|MIG)-[0-9a-fA-F-]+(?:/[0-9]+/[0-9]+)?")
_AD_LINE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_.]*)\s*=\s*(.*?)\s*$", re.MULTILINE)


@dataclass(frozen=True)
class JobMetadata:
    jobid: Optional[str] = None
    uid: Optional[int] = None
    account: str = ""
    partition: str = ""
    gpus: tuple[str, ...] = ()  # host GPU numbers ("0", "1") or UUIDs, as assigned


def split_gpu_list(text: str) -> tuple[str, ...]:
    """`0,1` -> ("0", "1"); also `GPU-a,GPU-b`, `CUDA0,CUDA1`; never split into characters.

    HTCondor's `CUDA<N>` names are turned into N. `NoDevFiles` and empty items mean none.
    """
    items: list[str] = []
    for item in text.split(","):
        item = item.strip()
        if not item or item in ("NoDevFiles", "none"):
            continue
        if item.startswith("CUDA") and item[4:].isdigit():
            item = item[4:]
        if item not in items:
            items.append(item)
    return tuple(items)


def _uuid_gpus(text: str) -> tuple[str, ...]:
    gpus = split_gpu_list(text)
    return gpus if gpus and all(_GPU_UUID.fullmatch(gpu) for gpu in gpus) else ()


def _int_or_none(text: Optional[str]) -> Optional[int]:
    return int(text) if text is not None and text.strip().isdigit() else None


def slurm_metadata(environ: Mapping[str, str]) -> JobMetadata:
    gpus = split_gpu_list(environ.get("SLURM_JOB_GPUS", ""))
    if not gpus:
        gpus = _uuid_gpus(environ.get("CUDA_VISIBLE_DEVICES", ""))
    jobid = environ.get("SLURM_JOB_ID", "").strip()
    return JobMetadata(
        jobid=jobid if jobid.isdigit() else None,
        uid=_int_or_none(environ.get("SLURM_JOB_UID")),
        account=environ.get("SLURM_JOB_ACCOUNT", ""),
        partition=environ.get("SLURM_JOB_PARTITION", ""),
        gpus=gpus,
    )


def parse_job_ad(text: str) -> dict[str, str]:
    """`Attr = value` lines of a ClassAd file; string values lose their quotes."""
    ad: dict[str, str] = {}
    for name, value in _AD_LINE.findall(text):
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = value[1:-1]
        ad[name.lower()] = value
    return ad


def condor_metadata(
    environ: Mapping[str, str], read_file: Callable[[str], Optional[str]]
) -> JobMetadata:
    """From the job ad the starter writes (`_CONDOR_JOB_AD`, else `.job.ad` in the scratch
    directory): job ID `ClusterId.ProcId`, accounting group; GPUs from `_CONDOR_AssignedGPUs`."""
    ad: dict[str, str] = {}
    for path in (environ.get("_CONDOR_JOB_AD"),
                 _join(environ.get("_CONDOR_SCRATCH_DIR"), ".job.ad")):
        text = read_file(path) if path else None
        if text:
            ad = parse_job_ad(text)
            break
    cluster, proc = ad.get("clusterid", ""), ad.get("procid", "")
    jobid = f"{cluster}.{proc}" if cluster.isdigit() and proc.isdigit() else None
    gpus = split_gpu_list(environ.get("_CONDOR_AssignedGPUs", ""))
    if not gpus:
        gpus = _uuid_gpus(environ.get("CUDA_VISIBLE_DEVICES", ""))
    return JobMetadata(
        jobid=jobid,
        account=ad.get("accountinggroup", ad.get("acctgroup", "")),
        gpus=gpus,
    )


def _join(directory: Optional[str], name: str) -> Optional[str]:
    return f"{directory.rstrip('/')}/{name}" if directory else None
