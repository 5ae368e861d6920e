from __future__ import annotations

from django.apps import AppConfig


class SiteConfig(AppConfig):
    """The shell as Django sees it: an app without models, so that the monitor's management
    commands (site/management/commands) and the login page's template are found."""

    name = "clusterwatch.monitor.site"
    label = "monitor_site"
    verbose_name = "clusterwatch monitor site"
