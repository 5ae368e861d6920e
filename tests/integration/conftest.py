"""Fixtures of the integration tests (helpers to import: browser_support.py here, and
tests/support/)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Callable

import pytest

from clusterwatch.loopback.slurm import SlurmCluster
from tests.support.slurm_prerequisites import require_slurm

from .browser_support import Browser


@pytest.fixture
def browser(live_server: Any, need_binary: Callable[[str], str], tmp_path: Path,
            django_user_model: Any) -> Browser:
    """Headless Chromium on pytest-django's live server, for the user `operator` (logged in
    through browser_support's shortcut)."""
    binary = need_binary("chromium")
    from clusterwatch.monitor.core.operators import set_operator

    set_operator(django_user_model.objects.create_user("operator",
                                                       password="not used: test login"), True)
    return Browser(binary, live_server.url, tmp_path)


@pytest.fixture
def python3(need_binary: Callable[[str], str]) -> str:
    return need_binary("python3")  # the harvester hosts' interpreter runs the zipapp


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[SlurmCluster]:
    """One real single-node Slurm cluster (cgroup v1, no accounting) for the modules that
    need only "a running cluster" (the job exporter's), started on first use and stopped at
    the end of the run. Each module selects its own jobs by ID and cancels the jobs it
    leaves running; a test of the cluster's own start or stop starts its own."""
    require_slurm()
    with SlurmCluster() as running:
        yield running
