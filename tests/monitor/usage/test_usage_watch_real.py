"""usage_watch on real parts: the session's Slurm cluster (its job that sleeps for a day: a
running job that idles), the job exporter on the machine's cgroups, a Prometheus scraping it
every second, aiosmtpd, and the installed console script on a migrated SQLite file, with a
short window ([running] idle_for_s = 3, cpu_min_cpus = 1, cpu_efficiency_min = 0.1). The
idle job's owner gets one email, and none on the next run; a job that keeps its CPU busy gets
none; the staff page lists the idle job."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from clusterwatch.loopback.services import prometheus, wait_for_query
from clusterwatch.loopback.smtp import SmtpServer
from tests.components import need_binary
from tests.jobs.exporter_process import console_script, serving
from tests.monitor.usage.mail_support import started
from tests.monitor.usage.real_slurm import USER, real_jobs

pytestmark = pytest.mark.integration

WINDOW_S = 3
BUSY = "exec python3 -c 'while True: pass'"
NEXT_RUN_AND_PAGE = """\
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client
call_command("usage_watch")
client = Client(HTTP_HOST="localhost")
client.force_login(User.objects.create_user("root", is_staff=True))
print(client.get("/usage/staff/running/").content.decode())
"""


def scraped(jobid: str) -> str:
    """The job's series with more scrapes than the window has seconds."""
    return f'count_over_time(jobs_cpu_seconds_total{{jobid="{jobid}"}}[60s]) > {WINDOW_S}'


def test_an_idle_running_job_gets_one_email_and_a_busy_one_none(
        pytestconfig: pytest.Config, tmp_path: Path, migrated: Path) -> None:
    jobs = real_jobs(pytestconfig)
    cluster = jobs.cluster
    busy = cluster.submit(BUSY, mem="50M", time="10", job_name="busy")
    smtp = started(SmtpServer())
    try:
        cluster.wait_running(busy)
        with serving(lambda port: [console_script(need_binary), "jobs", "serve", "--listen",
                                   f"127.0.0.1:{port}"],
                     lambda port: tmp_path / "exporter.log") as exporter, prometheus(
                {"jobs": [f"127.0.0.1:{exporter.port}"]}, tmp_path / "prometheus",
                scrape_interval="1s") as metrics:
            # Both jobs scraped for longer than the window, and the busy one measured busy:
            # synchronised on Prometheus itself, not on a sleep.
            wanted = {jobs.running, str(busy)}
            busy_rate = f'rate(jobs_cpu_seconds_total{{jobid="{busy}"}}[{WINDOW_S}s]) > 0.3'
            wait_for_query(metrics.url,
                           f"({scraped(str(busy))} and {busy_rate}) or {scraped(jobs.running)}",
                           lambda answer: wanted <= {
                               row["metric"].get("jobid") for row in answer["data"]["result"]},
                           timeout=60)
            thresholds = tmp_path / "usage.toml"
            # A busy job on a loaded machine may get a third of its CPU, an idle one none.
            thresholds.write_text(f"[running]\nidle_for_s = {WINDOW_S}\ncpu_min_cpus = 1\n"
                                  "cpu_efficiency_min = 0.1\n")
            env = {key: value for key, value in os.environ.items()
                   if not key.startswith(("CLUSTERWATCH_", "DJANGO_", "SLURM_"))}
            env.update({
                "CLUSTERWATCH_DATA_DIR": str(migrated), "CLUSTERWATCH_PROMETHEUS_URL": metrics.url,
                "CLUSTERWATCH_SACCT": cluster.accounting.sacct_program,
                "CLUSTERWATCH_USAGE_THRESHOLDS": str(thresholds),
                "CLUSTERWATCH_EMAIL_HOST": "127.0.0.1", "CLUSTERWATCH_EMAIL_PORT": str(smtp.port),
                "CLUSTERWATCH_EMAIL_FROM": "clusterwatch@example.org",
                "CLUSTERWATCH_EMAIL_BASE_URL": "http://127.0.0.1:8000",
                "CLUSTERWATCH_EMAIL_DOMAIN": "example.org"})

            def watch(*arguments: str) -> subprocess.CompletedProcess[str]:
                return subprocess.run([console_script(need_binary), "monitor", *arguments],
                                      env=env, capture_output=True, text=True, timeout=120,
                                      check=False, stdin=subprocess.DEVNULL)

            first = watch("usage_watch")
            assert first.returncode == 0, first.stdout + first.stderr
            flagged = {line.split()[1]: line for line in first.stdout.splitlines()
                       if line.startswith("job ")}
            assert flagged[jobs.running].startswith(
                f"job {jobs.running} ({USER}, 1 CPUs): cpu_idle (new): In the last 3 seconds ")
            assert str(busy) not in flagged
            mine = [m for m in smtp.wait_for(len(flagged))
                    if m["X-Clusterwatch-Job"] in wanted]
            assert [(m["X-Clusterwatch-Job"], m["X-Clusterwatch-Rule"], m["To"]) for m in mine] \
                == [(jobs.running, "cpu_idle", f"{USER}@example.org")]
            # The next run and the staff page in one process (a Django start saved).
            after = watch("shell", "-c", NEXT_RUN_AND_PAGE)
            assert after.returncode == 0, after.stderr
            assert f"job {jobs.running} ({USER}, 1 CPUs): cpu_idle: " in after.stdout
            assert f">{jobs.running}<" in after.stdout and f">{busy}<" not in after.stdout
            assert "Idle CPUs" in after.stdout
            assert len(smtp.wait_for(len(smtp.messages) + 1, timeout=0.5)) == len(
                smtp.messages)
            assert [m["X-Clusterwatch-Job"] for m in smtp.messages].count(jobs.running) == 1
    finally:
        smtp.down()
        cluster.cancel(busy)
