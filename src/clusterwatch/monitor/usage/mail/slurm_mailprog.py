"""What Slurm hands its MailProg, read: which job, whose, which kind of mail. Pure.

slurmctld runs `MailProg -s "<subject>" <mail user>` (src/slurmctld/agent.c, `_mail_proc`),
killing it after 120 s, with the job's variables in the environment (`job_common_env_vars`
and `_build_mail_env`): SLURM_JOB_ID (the raw id; an array task also has SLURM_ARRAY_JOB_ID
and SLURM_ARRAY_TASK_ID), SLURM_JOB_USER, SLURM_JOB_NAME, SLURM_JOB_STATE, and
SLURM_JOB_MAIL_TYPE in words: Began, Ended, Failed, Requeued, "Reached time limit",
"Reached 90% of time limit", "StageOut/Teardown", "Invalid dependency". The subject is
`Slurm Job_id=4242 Name=analysis Ended, Run time 00:10:02, COMPLETED, ExitCode 0`; a whole
array's summary is `Slurm Array Summary Job_id=4240_* (4240) Name=... Ended, ...`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

# The end of a job: what Slurm says (Ended, Failed, and the time limit that ends it), and
# the --mail-type names, which a site's own wrapper may pass instead.
END_OF_JOB = frozenset({"ended", "failed", "reached time limit", "end", "fail", "time_limit",
                        "time_limit_100"})
_SUBJECT_TYPES = (("Reached time limit", "Reached time limit"), (" Ended", "Ended"),
                  (" Failed", "Failed"), (" Began", "Began"), (" Requeued", "Requeued"))
_SUBJECT_JOBID = re.compile(r"\bJob_id=([0-9]+(?:_[0-9]+)?)(?=[ ,]|$)")
_DIGITS = re.compile(r"[0-9]{1,12}")


@dataclass(frozen=True)
class MailProgCall:
    jobid: str  # 4242, or 4240_7 for an array task; "" when Slurm gave none
    user: str
    mail_type: str
    address: str  # the job's --mail-user (Slurm's default: the user name)
    array_summary: bool  # one mail for a whole array, no single job


def read_call(subject: str, address: str, environ: Mapping[str, str]) -> MailProgCall:
    mail_type = environ.get("SLURM_JOB_MAIL_TYPE", "").strip() or _type_of(subject)
    return MailProgCall(jobid=_jobid(subject, environ),
                        user=environ.get("SLURM_JOB_USER", "").strip(),
                        mail_type=mail_type, address=address.strip(),
                        array_summary=subject.startswith("Slurm Array Summary"))


def is_end_of_job(mail_type: str) -> bool:
    return mail_type.strip().lower() in END_OF_JOB


def _jobid(subject: str, environ: Mapping[str, str]) -> str:
    array_job = environ.get("SLURM_ARRAY_JOB_ID", "").strip()
    task = environ.get("SLURM_ARRAY_TASK_ID", "").strip()
    if _DIGITS.fullmatch(array_job) and _DIGITS.fullmatch(task):
        return f"{array_job}_{task}"  # the id accounting and users know it by
    jobid = environ.get("SLURM_JOB_ID", "").strip()
    if jobid:
        return jobid
    found = _SUBJECT_JOBID.search(subject)
    return found.group(1) if found else ""


def _type_of(subject: str) -> str:
    """Without SLURM_JOB_MAIL_TYPE (a run by hand, an older Slurm), the subject says it."""
    for words, mail_type in _SUBJECT_TYPES:
        if words in subject:
            return mail_type
    return ""

