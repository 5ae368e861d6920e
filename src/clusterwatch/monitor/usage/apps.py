from __future__ import annotations

from django.apps import AppConfig


class UsageConfig(AppConfig):
    """The usage reports: always installed (its tables exist), served only when
    CLUSTERWATCH_PROMETHEUS_URL is set (`usage.config.usage_enabled`)."""

    name = "clusterwatch.monitor.usage"
    label = "usage"
    verbose_name = "clusterwatch usage reports"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from pathlib import Path

        from django.conf import settings

        from clusterwatch.monitor.usage.rendering.matplotlib_dir import use_matplotlib_dir

        # Before the views import matplotlib: its font list in the monitor's own directory.
        use_matplotlib_dir(Path(settings.DATA_DIR) / "matplotlib")
