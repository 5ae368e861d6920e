"""/usage/accounts/<account>/?month=YYYY-MM: one Slurm account's month; /usage/accounts/: the
accounts of a month, each with its figures.

Who sees an account's page: staff, and the account's coordinators (usage.coordinators). An
account with no kept job at all and an account the asker may not see get the same 404 page,
byte for byte, after the same one query; the index shows staff every account and a
coordinator theirs, and is a 404 page to anyone else.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from clusterwatch.monitor.core.refusals import Refusal
from clusterwatch.monitor.core.view_guard import reads_dates
from clusterwatch.monitor.usage.accounts_source import month_reports
from clusterwatch.monitor.usage.analysis.accounts import Month
from clusterwatch.monitor.usage.coordinators import ACCOUNT_RE, coordinators_or_none
from clusterwatch.monitor.usage.models import KeptSummary
from clusterwatch.monitor.usage.web.account_page import account_view, index_rows
from clusterwatch.monitor.usage.web.page_views import NO_SUCH_PAGE, SOURCES_DOWN, usage_page

NO_SUCH_ACCOUNT = "no account with this name that you may see"
HINTS = {
    400: "Check the address: an account is a Slurm account name, a month is YYYY-MM "
         "(e.g. ?month=2026-11).",
    404: "Check the account name. Staff see every account; an account's coordinators see "
         "theirs.",
    503: SOURCES_DOWN,
}


@reads_dates()  # a month, not a day: `month=YYYY-MM`
@usage_page(HINTS)
def account_page(request: HttpRequest, account: str) -> HttpResponse:
    if not ACCOUNT_RE.fullmatch(account):
        raise Refusal(400, f"not an account name: {account[:40]!r}")
    month = _month(request)
    known = KeptSummary.objects.filter(account=account).exists()  # asked whoever asks
    if not known or account not in _accounts_seen_by(request.user, [account]):
        raise Refusal(404, NO_SUCH_ACCOUNT)
    now = timezone.now()
    reports = month_reports(month, account)
    report = reports[0] if reports else None
    return render(request, "usage/account.html", {
        "view": account_view(account, month, report, now)})


@reads_dates()
@usage_page(HINTS)
def accounts_index(request: HttpRequest) -> HttpResponse:
    month = _month(request)
    user = request.user
    coordinated = coordinators_or_none().accounts_of(user.get_username())
    if not user.is_staff and not coordinated:
        raise Refusal(404, NO_SUCH_PAGE)
    known = KeptSummary.objects.values_list("account", flat=True).distinct()
    if not user.is_staff:
        known = known.filter(account__in=coordinated)
    accounts = [name for name in known if name]
    reports = [report for report in month_reports(month)
               if user.is_staff or report.account in coordinated]
    return render(request, "usage/accounts.html", {
        "month": str(month), "rows": index_rows(accounts, reports),
        "earlier": str(month.previous()), "later": str(month.following()),
        "staff": user.is_staff})


def _accounts_seen_by(user: Any, accounts: Iterable[str]) -> set[str]:
    if user.is_staff:
        return set(accounts)
    mine = coordinators_or_none().accounts_of(user.get_username())
    return {account for account in accounts if account in mine}


def _month(request: HttpRequest) -> Month:
    """`?month=YYYY-MM`, default the last complete month (the monthly email's)."""
    given = request.GET.getlist("month")
    if not given:
        return Month.last_complete(timezone.now())
    if len(given) > 1:
        raise Refusal(400, "month is given more than once")
    try:
        return Month.parse(given[0])
    except ValueError:
        raise Refusal(400, f"month must be YYYY-MM, such as 2026-11, not "
                           f"{given[0][:40]!r}") from None
