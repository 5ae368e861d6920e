"""The real parts of the end-to-end test, started on loopback and stopped however it ends.

`running_stack(workdir)` starts, in one ExitStack: the Slurm cluster with slurmdbd and
MariaDB, the job exporter (`clusterwatch jobs serve`, the installed console script, on the
machine's real cgroups), a Prometheus scraping it every second, an SMTP server (aiosmtpd), the
monitor under gunicorn with the usage reports and the email settings pointed at all of these,
and then the three jobs (end_to_end_jobs.py). It yields once every job has ended, is in
accounting, and its figures are final (kept summaries are written at end + 2 scrapes).
"""

from __future__ import annotations

import contextlib
import secrets
import subprocess
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import pytest

from clusterwatch.loopback.monitor_server import MonitorServer, monitor_server, private_database
from clusterwatch.loopback.services import (
    LOOPBACK,
    MissingComponent,
    free_port,
    prometheus,
    require_binary,
)
from clusterwatch.loopback.slurm import (
    SlurmCluster,
    SlurmUnavailable,
    check_prerequisites,
    find_binary,
)
from clusterwatch.loopback.slurmdbd import check_accounting_binaries
from clusterwatch.loopback.smtp import SmtpServer
from clusterwatch.monitor.usage.usage_report import KEEP_AFTER_SCRAPES
from tests.components import need_binary, unavailable
from tests.jobs.exporter_process import console_script, serving
from tests.monitor.usage.end_to_end_jobs import (
    RanJob,
    release,
    submit_in_turn,
    what_it_did,
)

SCRAPE_INTERVAL_S = 1
JOB_TIMEOUT_S = 150.0  # the three jobs run one after another, ~33 s each
USER = "cwjobtest"  # the cluster's job user, and a local account of the monitor
MAIL_DOMAIN = "example.org"
_CREATE_USER = ("import os\nfrom django.contrib.auth import get_user_model\n"
                f"get_user_model().objects.create_user({USER!r}, "
                "password=os.environ['E2E_PASSWORD'])\n")


@dataclass(frozen=True)
class Stack:
    cluster: SlurmCluster
    server: MonitorServer
    smtp: SmtpServer
    password: str  # of the monitor's local account USER
    token: str  # a usage API token acting as USER
    jobs: tuple[RanJob, ...]

    def console(self, *arguments: str) -> subprocess.CompletedProcess[str]:
        """`clusterwatch monitor ARGUMENTS` (the console script) with the server's settings."""
        return subprocess.run([console_script(need_binary), "monitor", *arguments],
                              env=dict(self.server.environ), capture_output=True, text=True,
                              timeout=120, check=False, stdin=subprocess.DEVNULL)


def require_components() -> None:
    """A missing program fails under CI=true, skips elsewhere; no root or cgroup v1 skips."""
    try:
        check_prerequisites()
        check_accounting_binaries(find_binary)
        for name in ("prometheus", "pdftotext"):
            require_binary(name)
        import aiosmtpd  # noqa: F401
    except MissingComponent as missing:
        unavailable(missing)
    except ImportError as missing:
        unavailable(f"aiosmtpd cannot be imported ({missing}): pip install aiosmtpd")
    except SlurmUnavailable as reason:
        pytest.skip(str(reason))


@contextlib.contextmanager
def running_stack(workdir: Path, template: Optional[Mapping[str, str]] = None,
                  ) -> Iterator[Stack]:
    """Slurm with accounting, the job exporter, Prometheus, SMTP and the monitor; `template`
    (the `migrated_database` fixture) gives the monitor a copy of a migrated database."""
    with contextlib.ExitStack() as running:
        cluster = running.enter_context(SlurmCluster(accounting=True))
        exporter = running.enter_context(job_exporter(workdir / "exporter.log"))
        metrics = running.enter_context(prometheus(
            {"jobs": [exporter]}, workdir / "prometheus", scrape_interval=f"{SCRAPE_INTERVAL_S}s"))
        smtp = running.enter_context(SmtpServer())
        data_dir = workdir / "monitor"
        database = running.enter_context(private_database(data_dir, template=template))
        port = free_port()
        server = running.enter_context(monitor_server(
            data_dir, database=database, port=port, migrate=template is None, extra_environ={
                "CLUSTERWATCH_PROMETHEUS_URL": metrics.url,
                "CLUSTERWATCH_SACCT": cluster.accounting.sacct_program,
                "CLUSTERWATCH_SCRAPE_INTERVAL_S": str(SCRAPE_INTERVAL_S),
                "CLUSTERWATCH_EMAIL_HOST": LOOPBACK,
                "CLUSTERWATCH_EMAIL_PORT": str(smtp.port),
                "CLUSTERWATCH_EMAIL_FROM": f"clusterwatch@{MAIL_DOMAIN}",
                "CLUSTERWATCH_EMAIL_BASE_URL": f"http://{LOOPBACK}:{port}",
                "CLUSTERWATCH_EMAIL_DOMAIN": MAIL_DOMAIN,
                "CLUSTERWATCH_EMAIL_JOBS": "warnings",
            }))
        password = secrets.token_urlsafe(18)
        server.manage("shell", "-c", _CREATE_USER, extra_environ={"E2E_PASSWORD": password})
        token = server.manage("create_usage_token", USER).stdout.strip().splitlines()[-1]
        # Then the jobs, each released as soon as it starts: a job kept waiting would count
        # the wait in its elapsed time, and look idle.
        submitted = submit_in_turn(cluster)
        for _plan, jobid in submitted:
            release(cluster, jobid)
        for _plan, jobid in submitted:
            state = cluster.wait_done(jobid, timeout=JOB_TIMEOUT_S)
            assert state == "COMPLETED", f"job {jobid} {state}:\n{cluster.job_output(jobid)}"
            cluster.accounting.wait_accounted(jobid)
        # The exporter's last scrape of the last job has landed: its figures are final.
        time.sleep(KEEP_AFTER_SCRAPES * SCRAPE_INTERVAL_S + 1)
        jobs = tuple(RanJob(plan, str(jobid), what_it_did(cluster, jobid))
                     for plan, jobid in submitted)
        yield Stack(cluster, server, smtp, password, token, jobs)


@contextlib.contextmanager
def job_exporter(log_path: Path) -> Iterator[str]:
    """`clusterwatch jobs serve` on the machine's cgroups and /proc; yields host:port. It must
    end with status 0 on SIGTERM."""
    def command(port: int) -> list[str]:
        return [console_script(need_binary), "jobs", "serve", "--listen", f"{LOOPBACK}:{port}"]

    with serving(command, lambda port: log_path) as exporter:
        yield f"{LOOPBACK}:{exporter.port}"
