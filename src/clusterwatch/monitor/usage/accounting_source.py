"""The configured accounting source: nothing above this module names the scheduler."""

from __future__ import annotations

import os
from collections.abc import Mapping

from clusterwatch.monitor.usage.accounting.interface import Accounting
from clusterwatch.monitor.usage.accounting.sacct import SacctAccounting
from clusterwatch.monitor.usage.config import UsageConfig


def accounting(config: UsageConfig) -> Accounting:
    """`sacct` (default), or the restricted view of Slurm's database (CLUSTERWATCH_ACCOUNTING=
    slurmdb, its connection from CLUSTERWATCH_SLURMDB_*); AccountingConfigError when wrong."""
    if config.accounting == "slurmdb":
        from clusterwatch.monitor.usage.accounting.slurmdb import (
            SlurmDbAccounting,  # PyMySQL only here
        )

        return SlurmDbAccounting.from_environment()
    return SacctAccounting(config.sacct_program, environ=sacct_environment(os.environ))


def sacct_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The monitor's environment less its secret key: sacct (or a site's wrapper) has no
    business with the key that signs every session."""
    return {name: value for name, value in environ.items()
            if name != "CLUSTERWATCH_SECRET_KEY"}
