"""usage_watch's exit statuses through the installed console script, on a migrated SQLite file,
the stand-in sacct, a loopback Prometheus and a real SMTP server: 1 when Prometheus fails (one
line), 2 for a bad option, 78 for a bad [running] threshold (one line, naming it). Exit 0
when it alerted is run through the console script on real Slurm (test_usage_watch_real)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

from clusterwatch.loopback.running_prometheus import RunningPrometheus
from tests.monitor.usage.cli_support import Cli


def test_its_exit_statuses(mail_cli: Cli, tmp_path: Path) -> None:
    # 0 when it alerted: tests/monitor/usage/test_usage_watch_real.py, on real Slurm.
    start = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(hours=3)
    mail_cli.site.job("6001", user="alice", state="RUNNING", running=True, start=start,
                      hours=3, cpus=2, req_mem="4G")
    with RunningPrometheus() as prometheus:
        env = {"CLUSTERWATCH_PROMETHEUS_URL": prometheus.url}
        prometheus.fail_with(502)
        down = mail_cli.run("monitor", "usage_watch", **env)
        assert down.returncode == 1
        assert down.stderr.strip().splitlines()[-1].endswith(
            "Prometheus is unavailable (unavailable): Prometheus answered HTTP 502")

        bad_option = mail_cli.run("monitor", "usage_watch", "--every", "5", **env)
        assert bad_option.returncode == 2

        thresholds = tmp_path / "usage.toml"
        thresholds.write_text("[running]\nmemory_near_limit = 95\n")
        misconfigured = mail_cli.run("monitor", "usage_watch", **env,
                                     CLUSTERWATCH_USAGE_THRESHOLDS=str(thresholds))
        assert misconfigured.returncode == 78
        [line] = misconfigured.stderr.strip().splitlines()
        assert "running.memory_near_limit is a fraction from 0 to 1" in line
    assert mail_cli.smtp.wait_for(1, timeout=0.3) == []
