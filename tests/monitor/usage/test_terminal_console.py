"""`clusterwatch usage` as installed: the console script, on a host where Django cannot be
imported (a `django` package that raises on import stands first on the path, as an install
without the monitor extra has none), with the exit statuses cron and scripts read."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path

from tests.jobs.exporter_process import console_script
from tests.monitor.usage.site import GiB, UsageSite, environment

POISON = "raise ImportError('this host has no Django: clusterwatch usage must not need it')\n"


def test_the_console_script_reports_without_django_and_exits_as_documented(
        usage_site: UsageSite, tmp_path: Path, need_binary: Callable[[str], str]) -> None:
    start = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(hours=3)
    begun, ended = usage_site.job("4242", start=start, cpus=2, req_mem="8G")
    usage_site.measured("4242", begun, ended, busy_cpus=0.5, memory_bytes=1 * GiB)
    poisoned = tmp_path / "no-django"
    (poisoned / "django").mkdir(parents=True)
    (poisoned / "django" / "__init__.py").write_text(POISON)
    system = tmp_path / "usage.toml"
    system.write_text("[usage]\n")
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "USER": "alice",
           "PYTHONPATH": str(poisoned), "CLUSTERWATCH_USAGE_CONFIG": str(system),
           **environment(usage_site)}
    program = console_script(need_binary)

    def usage(*arguments: str, **changes: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([program, "usage", *arguments], env={**env, **changes},
                              capture_output=True, text=True, timeout=60, check=False,
                              stdin=subprocess.DEVNULL)

    reported = usage("--json", "4242")
    assert (reported.returncode, reported.stderr) == (0, "")
    document = json.loads(reported.stdout)
    assert document["jobid"] == "4242" and document["cpu_efficiency"] < 0.3
    assert {w["code"] for w in document["warnings"]} >= {"low_cpu_efficiency"}
    unknown = usage("77")
    assert (unknown.returncode, unknown.stderr) == (
        1, "clusterwatch: job 77 is unknown to accounting\n")
    malformed = usage("4242.batch")
    assert malformed.returncode == 2 and "not a job id" in malformed.stderr
    unconfigured = usage("4242", CLUSTERWATCH_PROMETHEUS_URL="")
    assert unconfigured.returncode == 78 and "no source of figures" in unconfigured.stderr

