"""`clusterwatch monitor usage_monthly [--month YYYY-MM] [--account A] [--json]`: each Slurm
account's month from the kept summaries (docs/usage.md, "Monthly account reports").

Exit 0 (an empty month says so), 2 a bad --month (one line).
"""

from __future__ import annotations

import json
from dataclasses import asdict
from datetime import datetime, timezone
from typing import Any, Optional

from django.core.management.base import BaseCommand, CommandError, CommandParser

from clusterwatch.monitor.usage.accounts_source import month_jobs
from clusterwatch.monitor.usage.analysis.accounts import (
    EARLIER_MONTHS,
    AccountFigures,
    AccountReport,
    Month,
    monthly_reports,
)


class Command(BaseCommand):
    help = ("Each Slurm account's month from the kept summaries: jobs, CPU- and GPU-hours "
            "allocated, efficiencies weighted by CPU-hours, the most wasteful jobs and users, "
            "the three months before. Exit 0, 2 a bad --month.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--month", metavar="YYYY-MM",
                            help="the calendar month (UTC); default: the last complete one")
        parser.add_argument("--account", metavar="A", help="this account alone")
        parser.add_argument("--json", action="store_true", help="a JSON document")

    def handle(self, *args: Any, **options: Any) -> None:
        month = _month(options["month"])
        account: Optional[str] = options["account"]
        first = month
        for _ in range(EARLIER_MONTHS):
            first = first.previous()
        reports = monthly_reports(month_jobs(first, month, account), month, account=account)
        if options["json"]:
            self.stdout.write(json.dumps({"month": str(month), "accounts": [
                asdict(report) for report in reports]}, indent=1))
        elif not reports:
            self.stdout.write(f"No kept jobs ran in {month}"
                              + (f" for account {account}." if account else "."))
        else:
            self.stdout.write("\n\n".join(_text(report) for report in reports))


def _month(text: Optional[str]) -> Month:
    if text is None:
        return Month.last_complete(datetime.now(timezone.utc))
    try:
        return Month.parse(text)
    except ValueError as exc:
        raise CommandError(str(exc), returncode=2) from None


def _percent(value: Optional[float]) -> str:
    return "-" if value is None else f"{100 * value:.0f} %"


def _row(figures: AccountFigures) -> str:
    return (f"  {figures.month:8} {figures.jobs:7d} {figures.cpu_hours:11.1f} "
            f"{figures.gpu_hours:10.1f} {_percent(figures.cpu_efficiency):>7} "
            f"{_percent(figures.memory_efficiency):>7} {figures.wasted_cpu_hours:12.1f}")


def _text(report: AccountReport) -> str:
    lines = [f"Account {report.account}",
             f"  {'month':8} {'jobs':>7} {'CPU-hours':>11} {'GPU-hours':>10} {'CPU':>7} "
             f"{'memory':>7} {'wasted CPU-h':>12}",
             _row(report.figures), *(_row(earlier) for earlier in report.earlier)]
    for title, items in (("jobs", report.wasteful_jobs), ("users", report.wasteful_users)):
        if items:
            lines.append(f"  most wasteful {title}: " + ", ".join(
                f"{item.name} ({item.wasted_cpu_hours:.1f} of {item.cpu_hours:.1f} CPU-h)"
                for item in items))
    return "\n".join(lines)
