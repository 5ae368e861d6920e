"""What the header offers (a template context processor).

A site that runs only Slurm deploys the monitor for the usage reports alone: the harvester
pages stay out of its navigation until a host has reported. They are the operators' pages
(clusterwatch.monitor.core.operators): a researcher's header never links them.
"""

from __future__ import annotations

from django.http import HttpRequest

from clusterwatch.monitor.core.models import LatestReport
from clusterwatch.monitor.core.operators import is_operator
from clusterwatch.monitor.usage.config import usage_enabled


def navigation(request: HttpRequest) -> dict[str, bool]:
    usage = usage_enabled()
    if not request.user.is_authenticated:
        return {"nav_usage": usage, "nav_harvester": not usage}
    if not is_operator(request.user):
        return {"nav_usage": usage, "nav_harvester": False}
    return {"nav_usage": usage,
            "nav_harvester": not usage or LatestReport.objects.exists()}
