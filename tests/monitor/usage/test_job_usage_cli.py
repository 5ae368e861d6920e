"""`clusterwatch monitor job_usage JOBID` through the installed console script: the same
JSON as the API, exit 0 found, 1 unknown job or a failed source, 78 configuration error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.monitor.usage.cli_support import run
from tests.monitor.usage.site import UsageSite

# Each test's data directory is a copy of the migrated one (`migrated`, in conftest.py).
pytestmark = pytest.mark.usefixtures("migrated")


def test_it_prints_the_apis_document_and_exits_0(tmp_path: Path, site: UsageSite) -> None:
    start, end = site.job("4242")
    site.measured("4242", start, end, busy_cpus=1.0, memory_bytes=2 * 1024**3)
    done = run(tmp_path, site, "job_usage", "4242")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["jobid"] == "4242"
    assert document["cpu_efficiency"] == pytest.approx(0.5, abs=0.02)
    assert "low_cpu_efficiency" in {w["code"] for w in document["warnings"]}


def test_an_unknown_job_exits_1_with_one_line(tmp_path: Path, site: UsageSite) -> None:
    done = run(tmp_path, site, "job_usage", "77")
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.strip() == "clusterwatch: job 77 is unknown to accounting"


def test_a_failing_source_exits_1(tmp_path: Path, site: UsageSite) -> None:
    site.job("4242")
    site.prometheus.fail_with(503, b"{}")
    done = run(tmp_path, site, "job_usage", "4242")
    assert done.returncode == 1 and "Prometheus is unavailable" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    site.fail("sacct: error: slurmdbd is down")
    done = run(tmp_path, site, "job_usage", "4242")
    assert done.returncode == 1 and "slurmdbd is down" in done.stderr


@pytest.mark.parametrize(("changes", "says"), [
    ({"CLUSTERWATCH_PROMETHEUS_URL": ""}, "CLUSTERWATCH_PROMETHEUS_URL is not set"),
    ({"CLUSTERWATCH_PROMETHEUS_URL": "ftp://x"}, "must be an http:// or https:// URL"),
    ({"CLUSTERWATCH_SACCT": "/nonexistent/sacct"}, "sacct program not found"),
    ({"CLUSTERWATCH_SCRAPE_INTERVAL_S": "-1"}, "CLUSTERWATCH_SCRAPE_INTERVAL_S"),
    ({"CLUSTERWATCH_USAGE_THRESHOLDS": "/nonexistent.toml"}, "does not exist"),
    ({"CLUSTERWATCH_ACCOUNTING": "condor"}, "CLUSTERWATCH_ACCOUNTING must be one of"),
    ({"CLUSTERWATCH_ACCOUNTING": "slurmdb"}, "needs CLUSTERWATCH_SLURMDB_URL"),
])
def test_a_configuration_error_exits_78_with_one_line(tmp_path: Path, site: UsageSite,
                                                      changes: dict[str, str], says: str) -> None:
    site.job("4242")
    done = run(tmp_path, site, "job_usage", "4242", **changes)
    assert done.returncode == 78, done.stderr
    assert says in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert "Traceback" not in done.stderr


def test_a_malformed_job_id_exits_1_without_running_sacct(tmp_path: Path,
                                                          site: UsageSite) -> None:
    done = run(tmp_path, site, "job_usage", "1;rm")
    assert done.returncode == 1 and "not a job id" in done.stderr


def test_sacct_runs_without_the_monitors_secret_key(tmp_path: Path, site: UsageSite) -> None:
    seen = tmp_path / "sacct-environment"
    spy = tmp_path / "spy-sacct"
    spy.write_text(f"#!/bin/sh\nenv > {seen}\n")
    spy.chmod(0o755)
    done = run(tmp_path, site, "job_usage", "4242", CLUSTERWATCH_SACCT=str(spy),
               CLUSTERWATCH_SECRET_KEY="the-key-that-signs-sessions", SLURM_CONF="/etc/x.conf")
    assert done.returncode == 1 and "unknown to accounting" in done.stderr
    environment_seen = seen.read_text()
    assert "SLURM_CONF=/etc/x.conf" in environment_seen
    assert "the-key-that-signs-sessions" not in environment_seen
