from __future__ import annotations

from django.apps import AppConfig


class MonitorConfig(AppConfig):
    name = "clusterwatch.monitor.core"
    label = "monitor"
    verbose_name = "clusterwatch monitor"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from clusterwatch.monitor.core import sqlite_tuning

        sqlite_tuning.connect()
        # The record schema is compiled by wsgi.warm() in the web workers, not here: every
        # management command (evaluate_alarms each minute) would pay for it too.
