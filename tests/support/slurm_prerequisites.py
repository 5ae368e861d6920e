"""What a test of the real Slurm cluster does when the machine cannot run one."""

from __future__ import annotations

import pytest

from clusterwatch.loopback import slurm
from clusterwatch.loopback.services import MissingComponent
from tests.components import unavailable


def require_slurm(*, accounting: bool = False) -> None:
    """A missing binary fails under CI=true and skips elsewhere; no root or no cgroup v1
    skips (like the exporter's Slurm tests)."""
    try:
        slurm.check_prerequisites(accounting=accounting)
    except MissingComponent as missing:
        unavailable(missing)
    except slurm.SlurmUnavailable as reason:
        pytest.skip(str(reason))
