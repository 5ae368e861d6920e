"""`clusterwatch monitor usage_share JOBID --user USER [--days N]`: a share link to a job's
report, made for its owner USER (support staff make one when the owner asks on a ticket).

The same link as the job page's "Share this report" (`share_links`), under the same rule:
USER must be an active account and the job's user, exactly. The link is printed once, as the
last line: the monitor's public URL (CLUSTERWATCH_EMAIL_BASE_URL) and its path, or the path
alone when that is not set; only its digest is kept. Exit 0 made; 1 no such active account,
not USER's job (or unknown: the same line), or accounting failed; 2 usage (JOBID, --user, a
--days outside 1-30); 78 configuration error.
"""

from __future__ import annotations

import argparse
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from clusterwatch.errors import ConfigError, RunError
from clusterwatch.monitor.usage import share_links
from clusterwatch.monitor.usage.accounting.interface import (
    AccountingConfigError,
    AccountingError,
    UnknownJob,
)
from clusterwatch.monitor.usage.config import get_config
from clusterwatch.monitor.usage.mail.settings import settings_of
from clusterwatch.monitor.usage.share_links import DEFAULT_DAYS, MAX_DAYS, BadDays
from clusterwatch.monitor.usage.usage_report import MetricsUnavailable, load_report
from clusterwatch.monitor.usage.web.report_answers import owned_by

NOT_THEIRS = "no job with this id whose user is {user!r}"


def _days(text: str) -> int:
    try:
        return share_links.days_of(text)
    except BadDays as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


class Command(BaseCommand):
    help = ("Make a link that shows job JOBID's report (page, plots, PDF) to whoever holds it "
            f"for --days days (1-{MAX_DAYS}, default {DEFAULT_DAYS}), for its owner --user; "
            "printed once, as the last line.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("jobid", metavar="JOBID", help="the job's id")
        parser.add_argument("--user", required=True, metavar="USER",
                            help="the job's owner, for whom the link is made")
        parser.add_argument("--days", type=_days, default=DEFAULT_DAYS, metavar="N",
                            help=f"how long the link opens (1-{MAX_DAYS} days)")

    def handle(self, *args: Any, **options: Any) -> None:
        config = get_config()  # ConfigError: exit 78 before any source is asked
        name: str = options["user"]
        model = get_user_model()
        user = model.objects.filter(**{model.USERNAME_FIELD: name}).first()
        if user is None or not user.is_active:
            raise CommandError(f"no active account {name[:64]!r} (an LDAP user exists here "
                               "once they have logged in)")
        try:
            report = load_report(options["jobid"], with_series=False, config=config,
                                 visible=owned_by(user.get_username()))
        except UnknownJob:
            raise RunError(NOT_THEIRS.format(user=name[:64])) from None
        except AccountingConfigError as exc:
            raise ConfigError(str(exc)) from None
        except (AccountingError, MetricsUnavailable) as exc:
            raise RunError(str(exc)) from None
        link, token = share_links.make(report.document["jobid"], user, options["days"],
                                       timezone.now())
        base = settings_of(settings).base_url
        self.stdout.write(f"job: {link.jobid}, for: {user.get_username()}")
        self.stdout.write(f"prefix: {link.prefix}, expires: {link.expires_at:%Y-%m-%d %H:%M} "
                          "UTC")
        self.stdout.write("The link is on the next line and is shown only this once:")
        self.stdout.write(base + share_links.shared_path(token))
