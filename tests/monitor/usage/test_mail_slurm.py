"""What slurmctld hands its MailProg, read (mail_slurm): the job, its user, the mail type."""

from __future__ import annotations

import pytest

from clusterwatch.monitor.usage.mail.slurm_mailprog import is_end_of_job, read_call

ENDED = "Slurm Job_id=4242 Name=analysis Ended, Run time 00:10:02, COMPLETED, ExitCode 0"
SLURM = {"SLURM_JOB_ID": "4242", "SLURM_JOB_USER": "alice", "SLURM_JOB_NAME": "analysis",
         "SLURM_JOB_STATE": "COMPLETED", "SLURM_JOB_MAIL_TYPE": "Ended"}


def test_it_reads_the_job_user_and_mail_type_from_slurms_environment() -> None:
    call = read_call(ENDED, "alice", SLURM)
    assert (call.jobid, call.user, call.mail_type, call.address) == (
        "4242", "alice", "Ended", "alice")
    assert not call.array_summary and is_end_of_job(call.mail_type)


def test_an_array_task_is_known_by_its_array_id() -> None:
    call = read_call("Slurm Array Task Job_id=4240_7 (4249) Name=a Ended, ...", "alice@x.org",
                     {**SLURM, "SLURM_JOB_ID": "4249", "SLURM_ARRAY_JOB_ID": "4240",
                      "SLURM_ARRAY_TASK_ID": "7"})
    assert call.jobid == "4240_7"


def test_an_arrays_summary_is_marked() -> None:
    call = read_call("Slurm Array Summary Job_id=4240_* (4240) Name=a Ended, COMPLETED", "a",
                     SLURM)
    assert call.array_summary


@pytest.mark.parametrize(("mail_type", "end"), [
    ("Ended", True), ("Failed", True), ("Reached time limit", True), ("END", True),
    ("FAIL", True), ("TIME_LIMIT", True), ("Began", False), ("Requeued", False),
    ("Reached 90% of time limit", False), ("StageOut/Teardown", False),
    ("Invalid dependency", False), ("", False),
])
def test_only_the_end_of_a_job_counts(mail_type: str, end: bool) -> None:
    assert is_end_of_job(mail_type) is end


def test_without_slurms_variables_the_subject_is_read() -> None:
    call = read_call(ENDED, "alice", {})
    assert (call.jobid, call.mail_type, call.user) == ("4242", "Ended", "")
    began = read_call("Slurm Job_id=7 Name=x Began, Queued time 00:00:01", "a", {})
    assert (began.jobid, began.mail_type) == ("7", "Began")
    assert read_call("hello", "a", {}).jobid == ""
