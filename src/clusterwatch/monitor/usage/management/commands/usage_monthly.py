"""`clusterwatch monitor usage_monthly [--month YYYY-MM] [--account A] [--json | --mail]`:
each Slurm account's month from the kept summaries (docs/usage.md, "Monthly account
reports"); `--mail` sends each account's report to its coordinators
(CLUSTERWATCH_USAGE_COORDINATORS), once per account, month and coordinator, through the
end-of-job email's SMTP settings (run by clusterwatch-usage-monthly.timer).

Exit 0 (an empty month says so; also nothing to send), 1 some send failed (one line each on
stderr; retried by the next run), 2 a bad --month or --json with --mail (one line), 78 a
configuration error.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from datetime import datetime, timezone
from typing import Any, Optional

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from clusterwatch.errors import ConfigError, RunError
from clusterwatch.monitor.usage.accounts_source import month_reports
from clusterwatch.monitor.usage.analysis.accounts import AccountFigures, AccountReport, Month
from clusterwatch.monitor.usage.coordinators import VARIABLE, configured_path, coordinators
from clusterwatch.monitor.usage.mail.monthly_delivery import queue, send_due
from clusterwatch.monitor.usage.mail.settings import require_sending, settings_of, smtp_password


class Command(BaseCommand):
    help = ("Each Slurm account's month from the kept summaries: jobs, CPU- and GPU-hours "
            "allocated, efficiencies weighted by CPU-hours, the most wasteful jobs and users, "
            "the three months before; --mail sends each account's to its coordinators. Exit "
            "0, 1 a send failed, 2 a bad --month, 78 configuration error.")
    # Django's system checks load every URL and view: seconds a timer's run has no use for.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--month", metavar="YYYY-MM",
                            help="the calendar month (UTC); default: the last complete one")
        parser.add_argument("--account", metavar="A", help="this account alone")
        parser.add_argument("--json", action="store_true", help="a JSON document")
        parser.add_argument("--mail", action="store_true",
                            help="send each account's report to its coordinators "
                                 f"({VARIABLE}), once per month")

    def handle(self, *args: Any, **options: Any) -> None:
        month = _month(options["month"])
        account: Optional[str] = options["account"]
        if options["mail"] and options["json"]:
            raise CommandError("--json and --mail exclude each other", returncode=2)
        if options["mail"]:
            self._mail(month, account)
            return
        reports = month_reports(month, account)
        if options["json"]:
            self.stdout.write(json.dumps({"month": str(month), "accounts": [
                asdict(report) for report in reports]}, indent=1))
        elif not reports:
            self.stdout.write(f"No kept jobs ran in {month}"
                              + (f" for account {account}." if account else "."))
        else:
            self.stdout.write("\n\n".join(_text(report) for report in reports))


    def _mail(self, month: Month, account: Optional[str]) -> None:
        mail = settings_of(settings)
        require_sending(mail)
        if configured_path() is None:
            raise ConfigError(f"{VARIABLE} is not set: the monthly email goes to each "
                              "account's coordinators, named in that file")
        found = coordinators()
        password = smtp_password(mail)
        now = datetime.now(timezone.utc)
        reports = month_reports(month, account)
        written, lost = queue(reports, found, mail, now)
        results = send_due(reports, str(month), mail, password, now, account)
        self.stderr.write(f"usage_monthly: {len(reports)} account{'s' if len(reports) != 1 else ''}"
                          f" ran jobs in {month}, {written} email{'s' if written != 1 else ''}"
                          f" queued, {len(results)} tried")
        for result in results:
            (self.stderr if result.outcome.failure else self.stdout).write(result.line(
                str(month)))
        failures = [result for result in [*lost, *results] if result.outcome.failure]
        for result in lost:
            self.stderr.write(result.line(str(month)))
        if failures:
            raise RunError(f"{len(failures)} monthly email{'s' if len(failures) != 1 else ''}"
                           " not sent (retried by the next run)")


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
