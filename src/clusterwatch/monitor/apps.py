from __future__ import annotations

from django.apps import AppConfig


class MonitorConfig(AppConfig):
    name = "clusterwatch.monitor"
    label = "monitor"
    verbose_name = "clusterwatch monitor"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from clusterwatch.monitor import sqlite_tuning
        from clusterwatch.monitor.ingest import validation

        sqlite_tuning.connect()
        # Compile the record schema now, not in the first reporter's request (~50 ms).
        validation.checkers()
