"""The usage reports' console-script tests: `clusterwatch monitor ...` run as an operator
runs it, on the data directory tmp_path/data (made by the `migrated` fixture) and the usage
site's fake sacct and loopback Prometheus (the `site` fixture, tests/monitor/usage/conftest);
`Cli`, the same with the email's settings and an SMTP server, for the email's commands."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from pathlib import Path

from clusterwatch.loopback.smtp import SmtpServer
from tests.monitor.usage.mail_support import BASE_URL, DOMAIN, SENDER
from tests.monitor.usage.site import UsageSite, environment

# The installed console script, beside the interpreter running the tests.
CONSOLE = shutil.which("clusterwatch", path=os.path.dirname(sys.executable)) or "clusterwatch"
ENDED = "Slurm Job_id={jobid} Name=analysis Ended, Run time 00:15:00, COMPLETED, ExitCode 0"


def run(tmp_path: Path, site: UsageSite, *arguments: str,
        **changes: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("CLUSTERWATCH_", "DJANGO_"))}
    env.update({"CLUSTERWATCH_DATA_DIR": str(tmp_path / "data"), **environment(site), **changes})
    return subprocess.run([CONSOLE, "monitor", *arguments], capture_output=True, text=True,
                          env=env, timeout=120, check=False)


class Cli:
    def __init__(self, tmp_path: Path, site: UsageSite, smtp: SmtpServer) -> None:
        self.site, self.smtp = site, smtp
        self.env = {key: value for key, value in os.environ.items()
                    if not key.startswith(("CLUSTERWATCH_", "DJANGO_", "SLURM_"))}
        self.env.update({
            "CLUSTERWATCH_DATA_DIR": str(tmp_path / "data"), **environment(site),
            "CLUSTERWATCH_EMAIL_HOST": "127.0.0.1", "CLUSTERWATCH_EMAIL_PORT": str(smtp.port),
            "CLUSTERWATCH_EMAIL_FROM": SENDER, "CLUSTERWATCH_EMAIL_BASE_URL": BASE_URL,
            "CLUSTERWATCH_EMAIL_DOMAIN": DOMAIN, "CLUSTERWATCH_EMAIL_JOBS": "all",
            "CLUSTERWATCH_EMAIL_TIMEOUT": "5"})

    def start(self, *arguments: str, **changes: str) -> subprocess.Popen[str]:
        return subprocess.Popen([CONSOLE, *arguments], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env={**self.env, **changes})

    def run(self, *arguments: str, **changes: str) -> subprocess.CompletedProcess[str]:
        process = self.start(*arguments, **changes)
        stdout, stderr = process.communicate(timeout=180)
        return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)

    def mailprog(self, jobid: str, mail_type: str = "Ended", **changes: str,
                 ) -> subprocess.Popen[str]:
        slurm: Mapping[str, str] = {"SLURM_JOB_ID": jobid, "SLURM_JOB_USER": "alice",
                                    "SLURM_JOB_MAIL_TYPE": mail_type, **changes}
        return self.start("monitor", "usage_mailprog", "-s", ENDED.format(jobid=jobid),
                          "alice", **slurm)

    def ended_job(self, jobid: str, minutes_ago: float = 15.0) -> None:
        start = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(
            minutes=15 + minutes_ago)
        end = start + timedelta(minutes=15)
        self.site.job(jobid, start=start, hours=0.25)
        self.site.measured(jobid, start, end, busy_cpus=1.0, memory_bytes=200 * 1024**2)


def finished(process: subprocess.Popen[str]) -> subprocess.CompletedProcess[str]:
    stdout, stderr = process.communicate(timeout=180)
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
