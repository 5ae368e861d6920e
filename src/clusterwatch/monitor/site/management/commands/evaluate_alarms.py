"""`clusterwatch monitor evaluate_alarms`: one alarm run (a timer runs it every minute)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from clusterwatch import http_client
from clusterwatch.errors import EXIT_CONFIG, ConfigError
from clusterwatch.monitor.alarms.config import load_config
from clusterwatch.monitor.alarms.lease import LeaseBusy
from clusterwatch.monitor.alarms.run import LeaseLost, run_alarms
from clusterwatch.notify.channel_config import build_channels

log = logging.getLogger("clusterwatch.monitor.alarms")

ALERTNAME = "ClusterwatchAlarm"  # Alertmanager's alertname for the monitor's alarms


class Command(BaseCommand):
    help = ("Evaluate the alarms over every key's latest record, record the transitions and "
            "deliver them to the channels of the alarms config (CLUSTERWATCH_ALARMS_CONFIG, "
            "default DATA_DIR/alarms.toml). Transitions are committed before any channel is "
            "tried; one run at a time across hosts (a run that finds another running skips).")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true",
                            help="print the run's summary as JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        path = Path(settings.ALARMS_CONFIG)
        try:
            config = load_config(path, settings.REPORT_INTERVAL_S)
            # The seam is looked up now, not bound at import: tests substitute it.
            channels = build_channels(config.channels, http_client.post, ALERTNAME)
        except ConfigError as exc:
            raise CommandError(str(exc), returncode=EXIT_CONFIG) from None
        if not config.found:
            self.stderr.write(f"no alarm channels: {path} does not exist; alarms are recorded "
                              "(see alarms_status) but not sent")
        elif not channels:
            self.stderr.write(f"no alarm channels in {path}: alarms are recorded (see "
                              "alarms_status) but not sent")
        try:
            result = run_alarms(config, channels)
        except LeaseBusy as exc:
            # Two hosts' timers fire together: the normal case, not a failure.
            self.stderr.write(f"evaluate_alarms: {exc}; this run skips")
            return
        except LeaseLost as exc:
            raise CommandError(str(exc)) from None
        summary = result.summary()
        if options["json"]:
            self.stdout.write(json.dumps({**summary, "events": [
                {**event.to_json(), "text": event.line()} for event in result.events]}))
            return
        for event in result.events:
            self.stdout.write(event.line())
        delivery = ", ".join(f"{name} {outcome}" for name, outcome
                             in summary["delivery"].items()) or "nothing sent"
        # Held: opened under a silence or window, alert not sent; released: sent now that
        # the hold has ended. Said only when there are some, so the usual line stays short.
        holds = "".join(f", {summary[word]} {word}" for word in ("held", "released")
                        if summary[word])
        self.stdout.write(f"alarms: {summary['keys']} keys, {summary['raised']} raised, "
                          f"{summary['recovered']} recovered{holds}, {summary['open']} open; "
                          f"{delivery}")
