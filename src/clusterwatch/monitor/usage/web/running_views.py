"""/usage/staff/running/: the running jobs that break a usage_watch rule now (staff only;
everyone else gets the staff page's 404, a visitor without a session the login page)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from clusterwatch.monitor.core.refusals import Refusal
from clusterwatch.monitor.core.view_guard import reads_dates
from clusterwatch.monitor.usage.web.page_views import LIST_HINTS, NO_SUCH_PAGE, usage_page
from clusterwatch.monitor.usage.web.running_rows import RUNNING_ROWS, breaking_now


@reads_dates()
@usage_page(LIST_HINTS)
def running_page(request: HttpRequest) -> HttpResponse:
    if not request.user.is_staff:
        raise Refusal(404, NO_SUCH_PAGE)
    return render(request, "usage/running.html", {
        "listing": breaking_now(timezone.now()), "shown": RUNNING_ROWS})
