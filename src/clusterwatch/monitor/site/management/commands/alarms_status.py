"""`clusterwatch monitor alarms_status`: open alarms (silenced? acknowledged?), silences and
maintenance windows, queues, dead letters, the last run."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from clusterwatch.monitor.alarms.config import windows_or_error
from clusterwatch.monitor.alarms.status import summary, write_text


class Command(BaseCommand):
    help = ("Show the open alarms (whether each is silenced, by what and until when, and "
            "who acknowledged it), the silences and maintenance windows, each channel's pending "
            "and dead-lettered messages, the last delivery errors and the last alarm run.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true", help="print it as JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        now = time.time()
        windows, error = windows_or_error(Path(settings.ALARMS_CONFIG),
                                          settings.REPORT_INTERVAL_S)
        data = summary(now, windows=windows, windows_error=error)
        if options["json"]:
            self.stdout.write(json.dumps(data, indent=2))
        else:
            write_text(data, now, self.stdout)
