"""Running the installed `clusterwatch` console script as a child process, as users do."""

from __future__ import annotations

import os
import subprocess
import sysconfig
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import pytest

from tests.components import unavailable

from .support import Pool


def child_env(home: Path, unbuffered: bool = False) -> dict[str, str]:
    """The test's environment without systemd and XDG settings, with HOME at `home`."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONUNBUFFERED", "JOURNAL_STREAM", "INVOCATION_ID",
                        "XDG_CONFIG_HOME", "XDG_STATE_HOME")}
    env["HOME"] = str(home)
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"
    return env


def console_script() -> Path:
    """The installed `clusterwatch`; missing, it fails the test under CI=true, else skips."""
    script = Path(sysconfig.get_path("scripts")) / "clusterwatch"
    if not script.exists():
        unavailable(f"no console script at {script} (package not installed)")
    return script


@dataclass(frozen=True)
class Run:
    returncode: int
    stdout: str
    stderr: str
    elapsed: float  # seconds, wall clock


def pool_args(pool: Pool, prometheus_url: Optional[str] = None) -> list[str]:
    """The common options pointing at the pool's fakes (Prometheus at `prometheus_url`)."""
    return ["--config-dir", str(pool.config_dir), "--state-dir", str(pool.state_dir),
            "--prometheus-url", prometheus_url or pool.prometheus.url,
            "--condor-status", str(pool.condor_status)]


def run_watch(pool: Pool, *verb: str, prometheus_url: Optional[str] = None,
              args: Optional[Sequence[str]] = None, limit: float = 60.0) -> Run:
    """`clusterwatch watch [VERB]` on the pool; a run longer than `limit` s fails the test."""
    argv = [str(console_script()), "watch",
            *(pool_args(pool, prometheus_url) if args is None else args), *verb]
    started = time.monotonic()
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=limit,
                              env=child_env(pool.root), check=False)
    except subprocess.TimeoutExpired:
        pytest.fail(f"clusterwatch watch {' '.join(verb)} ran longer than {limit:g} s",
                    pytrace=False)
    return Run(done.returncode, done.stdout, done.stderr, time.monotonic() - started)
