"""`clusterwatch monitor job_usage JOBID`: the job's usage document as JSON on stdout.

The same document as GET /api/v1/jobs/<jobid>/usage. Exit 0 found; 1 the job is unknown to
accounting, or accounting or Prometheus failed (one line on stderr); 78 configuration error.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from clusterwatch.errors import ConfigError, RunError
from clusterwatch.monitor.usage.accounting.interface import AccountingConfigError, AccountingError
from clusterwatch.monitor.usage.config import get_config
from clusterwatch.monitor.usage.peer_ranks import with_peer_ranks
from clusterwatch.monitor.usage.usage_report import MetricsUnavailable, load_report


class Command(BaseCommand):
    help = ("Print a job's usage report (figures and warnings) as JSON: the document of "
            "GET /api/v1/jobs/<jobid>/usage. Exit 0 found, 1 unknown job or a source failed, "
            "78 configuration error.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("jobid", metavar="JOBID",
                            help="a job id: 1234, an array task 1234_7, a component 1234+1")

    def handle(self, *args: Any, **options: Any) -> None:
        config = get_config()  # ConfigError: exit 78 before any source is asked
        try:
            report = load_report(options["jobid"], with_series=False, config=config)
        except AccountingConfigError as exc:
            raise ConfigError(str(exc)) from None
        except (AccountingError, MetricsUnavailable) as exc:
            raise RunError(str(exc)) from None
        self.stdout.write(json.dumps(with_peer_ranks(report.document), indent=1,
                                     sort_keys=False))
