"""The configured accounting source: nothing above this module names the scheduler."""

from __future__ import annotations

from clusterwatch.monitor.usage.accounting import Accounting
from clusterwatch.monitor.usage.config import UsageConfig
from clusterwatch.monitor.usage.sacct import SacctAccounting


def accounting(config: UsageConfig) -> Accounting:
    # CLUSTERWATCH_ACCOUNTING=slurmdb (the restricted database view) is chosen here too.
    return SacctAccounting(config.sacct_program)
