"""The real parts of the end-to-end test, started on loopback and stopped however it ends.

`running_stack(workdir)` starts, in one ExitStack: the Slurm cluster with slurmdbd and
MariaDB, the job exporter (`clusterwatch jobs serve`, the installed console script, on the
machine's real cgroups), a Prometheus scraping it every second, an SMTP server (aiosmtpd), the
monitor under gunicorn with the usage reports and the email settings pointed at all of these,
and then the three jobs (end_to_end_jobs.py). It yields once every job has ended, is in
accounting, and its figures are final (kept summaries are written at end + 2 scrapes).

Where Debian's `victoria-metrics` is installed, a VictoriaMetrics single node beside them
holds the same jobs' series: Prometheus remote-writes every sample it scrapes to it, so the
two stores hold the same samples and any difference in the reports is the query engine's,
not a scrape's (a second scraper would sample the jobs at other moments). The stack then also
waits until VictoriaMetrics holds every sample Prometheus has of the jobs.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import secrets
import shutil
import subprocess
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import pytest

from clusterwatch.loopback.monitor_server import (
    MonitorServer,
    manage,
    monitor_environ,
    monitor_server,
    private_database,
)
from clusterwatch.loopback.services import (
    LOOPBACK,
    MissingComponent,
    Service,
    free_port,
    make_searchable,
    prometheus,
    remote_write_url,
    require_binary,
    victoria_metrics,
)
from clusterwatch.loopback.slurm import (
    SlurmCluster,
    SlurmUnavailable,
    check_prerequisites,
    find_binary,
)
from clusterwatch.loopback.slurmdbd import check_accounting_binaries
from clusterwatch.loopback.smtp import SmtpServer
from clusterwatch.monitor.usage.metrics.prometheus_api import query_instant
from clusterwatch.monitor.usage.metrics.series import SPECS
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
REMOTE_WRITE_TIMEOUT_S = 30.0  # for VictoriaMetrics to hold what Prometheus has
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
    prometheus: Service
    # None: `victoria-metrics` is not installed (the tests that need it say so).
    victoria: Optional[Service] = None
    # The monitor's settings with the usage reports reading VictoriaMetrics, on a database of
    # their own: the server's keeps the jobs' summaries read from Prometheus, which
    # `job_usage` would answer with instead of asking VictoriaMetrics.
    victoria_environ: Optional[Mapping[str, str]] = None

    def console(self, *arguments: str) -> subprocess.CompletedProcess[str]:
        """`clusterwatch monitor ARGUMENTS` (the console script) with the server's settings."""
        return self._run(self.server.environ, arguments)

    def consoles_on_victoria(self, *commands: tuple[str, ...],
                             ) -> list[subprocess.CompletedProcess[str]]:
        """`clusterwatch monitor ARGUMENTS` for each of `commands`, all at once (each is a
        second of Django's start), with the usage reports reading VictoriaMetrics."""
        environ = self.victoria_environ
        assert environ is not None, "no VictoriaMetrics in this stack"
        with concurrent.futures.ThreadPoolExecutor(len(commands) or 1) as pool:
            return list(pool.map(lambda arguments: self._run(environ, arguments), commands))

    @staticmethod
    def _run(environ: Mapping[str, str], arguments: tuple[str, ...],
             ) -> subprocess.CompletedProcess[str]:
        return subprocess.run([console_script(need_binary), "monitor", *arguments],
                              env=dict(environ), capture_output=True, text=True,
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
        victoria = None
        if shutil.which("victoria-metrics"):
            # -search.latencyOffset at its least (1 s): the reports read the jobs seconds
            # after their end, and VictoriaMetrics' 30 s would hide their last points.
            victoria = running.enter_context(victoria_metrics(
                workdir / "victoria-metrics", latency_offset="1s"))
        metrics = running.enter_context(prometheus(
            {"jobs": [exporter]}, workdir / "prometheus", scrape_interval=f"{SCRAPE_INTERVAL_S}s",
            remote_write=[remote_write_url(victoria)] if victoria else []))
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
        victoria_environ = None
        if victoria is not None:
            victoria_data = workdir / "monitor-on-victoria"
            settings = running.enter_context(private_database(victoria_data, template=template))
            victoria_environ = {**server.environ, **settings,
                                "CLUSTERWATCH_PROMETHEUS_URL": victoria.url}
            if template is None:
                manage(monitor_environ(victoria_data, settings), "migrate", "--noinput", "-v", "0")
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
        if victoria is not None:
            same_samples(metrics, victoria, [job.jobid for job in jobs])
        yield Stack(cluster, server, smtp, password, token, jobs, metrics, victoria,
                    victoria_environ)


def same_samples(source: Service, copy: Service, jobids: list[str]) -> None:
    """Waits until `copy` holds as many samples of each of the jobs' series as `source`
    (remote write sends them in batches, a moment after Prometheus stored them)."""
    held = sample_counts(source, jobids)
    deadline = time.monotonic() + REMOTE_WRITE_TIMEOUT_S
    while (copied := sample_counts(copy, jobids)) != held:
        make_searchable(copy)
        if time.monotonic() > deadline:
            raise TimeoutError(f"VictoriaMetrics holds {copied} samples of the jobs' series, "
                               f"Prometheus {held}, after {REMOTE_WRITE_TIMEOUT_S:g} s")
        time.sleep(0.2)


def sample_counts(store: Service, jobids: list[str]) -> dict[str, float]:
    """Metric -> how many samples `store` holds of it for the jobs (one query a metric: a
    range function drops the name, so series of two metrics would collide in one)."""
    jobs = "|".join(jobids)
    counts = {}
    for metric in ("jobs_info", *(spec.metric for spec in SPECS)):
        promql = f'sum(count_over_time({metric}{{jobid=~"{jobs}"}}[10m]))'  # the stack is younger
        rows = query_instant(store.url, promql, time.time(), 10.0)
        counts[metric] = sum(s.points[-1][1] for s in rows if s.points)
    return counts


@contextlib.contextmanager
def job_exporter(log_path: Path) -> Iterator[str]:
    """`clusterwatch jobs serve` on the machine's cgroups and /proc; yields host:port. It must
    end with status 0 on SIGTERM."""
    def command(port: int) -> list[str]:
        return [console_script(need_binary), "jobs", "serve", "--listen", f"{LOOPBACK}:{port}"]

    with serving(command, lambda port: log_path) as exporter:
        yield f"{LOOPBACK}:{exporter.port}"
