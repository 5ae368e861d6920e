"""What the account pages show: one account's month (the figures of `usage_monthly`, from
the same functions) with the three months before, and the staff's index of accounts.

Pure: the reports come from accounts_source.month_reports (one query), which the command
and the monthly email use too, so the page can never say other figures than the email did.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Optional
from urllib.parse import quote

from clusterwatch.monitor.usage.analysis.accounts import AccountReport, Month, Wasted
from clusterwatch.monitor.usage.rendering.account_rows import MonthRow, hours, month_row
from clusterwatch.monitor.usage.rendering.shown_text import shown


@dataclass(frozen=True)
class WastedRow:
    name: str
    url: str
    wasted_cpu_hours: str
    cpu_hours: str


@dataclass(frozen=True)
class AccountView:
    account: str
    month: str
    so_far: bool  # the month has not ended yet
    rows: tuple[MonthRow, ...]  # the month first, then the three before
    jobs: tuple[WastedRow, ...]
    users: tuple[WastedRow, ...]
    earlier_url: str
    later_url: Optional[str]  # None past the current month


@dataclass(frozen=True)
class IndexRow:
    account: str
    url: str
    figures: Optional[MonthRow]  # None: no kept job ran in the month


def account_url(account: str, month: Optional[Month] = None) -> str:
    return f"/usage/accounts/{quote(account)}/" + (f"?month={month}" if month else "")


def account_view(account: str, month: Month, report: Optional[AccountReport],
                 now: datetime) -> AccountView:
    current = Month.last_complete(now).following()
    return AccountView(
        account=shown(account), month=str(month), so_far=month >= current,
        rows=() if report is None else tuple(
            month_row(figures) for figures in (report.figures, *report.earlier)),
        jobs=() if report is None else tuple(
            _wasted(item, f"/usage/jobs/{quote(item.name)}/") for item in report.wasteful_jobs),
        users=() if report is None else tuple(
            _wasted(item, f"/usage/users/{quote(item.name)}/")
            for item in report.wasteful_users),
        earlier_url=account_url(account, month.previous()),
        later_url=account_url(account, month.following()) if month < current else None)


def index_rows(accounts: Iterable[str], reports: Iterable[AccountReport]) -> list[IndexRow]:
    """One row per account, by name; the month's figures where it had kept jobs."""
    by_name = {report.account: report for report in reports}
    return [IndexRow(shown(name), account_url(name),
                     month_row(by_name[name].figures) if name in by_name else None)
            for name in sorted(set(accounts) | set(by_name))]


def _wasted(item: Wasted, url: str) -> WastedRow:
    return WastedRow(shown(item.name), url, hours(item.wasted_cpu_hours), hours(item.cpu_hours))
