"""Job identity from the environment: GPU lists split by comma, never into characters."""

from __future__ import annotations

import pytest

from clusterwatch.jobs.job_metadata import (
    JobMetadata,
    condor_metadata,
    parse_job_ad,
    slurm_metadata,
    split_gpu_list,
)


@pytest.mark.parametrize(("text", "expected"), [
    ("0,1", ("0", "1")),
    ("10,11", ("10", "11")),
    (" 3 , 5 ", ("3", "5")),
    ("", ()),
    ("NoDevFiles", ()),
    ("CUDA0,CUDA1", ("0", "1")),
    ("GPU-604ac76c,GPU-1b2c3d4e", ("GPU-604ac76c", "GPU-1b2c3d4e")),
    ("0,0", ("0",)),
])
def test_it_splits_gpu_lists_by_comma(text: str, expected: tuple[str, ...]) -> None:
    assert split_gpu_list(text) == expected


def test_it_reads_slurm_metadata() -> None:
    environ = {"SLURM_JOB_ID": "42", "SLURM_JOB_UID": "1000", "SLURM_JOB_ACCOUNT": "a",
               "SLURM_JOB_PARTITION": "p", "SLURM_JOB_GPUS": "2,3",
               "CUDA_VISIBLE_DEVICES": "0,1"}
    assert slurm_metadata(environ) == JobMetadata("42", 1000, "a", "p", ("2", "3"))


def test_it_trusts_cuda_visible_devices_only_with_uuids() -> None:
    assert slurm_metadata({"CUDA_VISIBLE_DEVICES": "0,1"}).gpus == ()
    uuids = "GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52,MIG-1b2c3d4e-0000-1111-2222-333344445555"
    assert slurm_metadata({"CUDA_VISIBLE_DEVICES": uuids}).gpus == tuple(uuids.split(","))


def test_it_ignores_a_job_id_that_is_not_a_number() -> None:
    assert slurm_metadata({"SLURM_JOB_ID": "42; rm -rf"}).jobid is None


def test_it_parses_a_job_ad() -> None:
    ad = parse_job_ad('ClusterId = 12\nProcId=0\nOwner = "alice"\nCmd = "/bin/x = y"\n')
    assert ad == {"clusterid": "12", "procid": "0", "owner": "alice", "cmd": "/bin/x = y"}


def test_it_reads_the_job_ad_from_the_scratch_directory_when_job_ad_is_unset() -> None:
    files = {"/var/lib/condor/execute/dir_1/.job.ad": "ClusterId = 7\nProcId = 3\n"
                                                      'AcctGroup = "cms"\n'}
    metadata = condor_metadata({"_CONDOR_SCRATCH_DIR": "/var/lib/condor/execute/dir_1/"},
                               files.get)
    assert (metadata.jobid, metadata.account) == ("7.3", "cms")


def test_it_has_no_condor_job_id_without_a_readable_ad() -> None:
    assert condor_metadata({"_CONDOR_JOB_AD": "/nowhere"}, lambda _: None).jobid is None
