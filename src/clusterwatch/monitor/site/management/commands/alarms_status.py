"""`clusterwatch monitor alarms_status`: open alarms, queues, dead letters, the last run."""

from __future__ import annotations

import json
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from clusterwatch.monitor.alarms.status import summary, write_text


class Command(BaseCommand):
    help = ("Show the open alarms, each channel's pending and dead-lettered messages, the "
            "last delivery errors and the last alarm run.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true", help="print it as JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        now = time.time()
        data = summary(now)
        if options["json"]:
            self.stdout.write(json.dumps(data, indent=2))
        else:
            write_text(data, now, self.stdout)
