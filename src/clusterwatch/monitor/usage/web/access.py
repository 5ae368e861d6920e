"""Who may see which job's report (who is asking is the kernel's: `core.asking`).

Staff see every job; a user sees their own jobs (the monitor's user name is the scheduler's
user name: LDAP's uid, or a local account of the same name), the jobs of the accounts they
coordinate (CLUSTERWATCH_USAGE_COORDINATORS: their account page links those jobs), and, when
CLUSTERWATCH_USAGE_ACCOUNT_ACCESS is on, the jobs of the accounts their own recent jobs ran
under. A refusal never says whether the job exists: the views answer it as an unknown job.
"""

from __future__ import annotations

from typing import Any

from clusterwatch.monitor.usage.config import UsageConfig
from clusterwatch.monitor.usage.coordinators import coordinators_or_none
from clusterwatch.monitor.usage.models import KeptSummary
from clusterwatch.monitor.usage.usage_report import Visibility


def visibility(user: Any, config: UsageConfig) -> Visibility:
    """A predicate over (job user, job account) for this asker."""
    if user.is_staff:
        return lambda _user, _account: True
    name = user.get_username()
    accounts = _accounts_of(name) if config.account_access else frozenset()
    accounts |= coordinators_or_none().accounts_of(name)
    return lambda job_user, account: job_user == name or account in accounts


def may_see_user(user: Any, username: str) -> bool:
    return bool(user.is_staff) or user.get_username() == username


def _accounts_of(name: str) -> frozenset[str]:
    # The accounts the user's own kept jobs ran under: the scheduler's association table is
    # not needed, and an account the user never used grants nothing.
    accounts = KeptSummary.objects.filter(user=name).values_list("account", flat=True)
    return frozenset(a for a in accounts.distinct() if a)
