"""The operators' pages, the alarms' included (at the site root: `clusterwatch.monitor.site.urls`;
`/` is the usage reports' index, or a redirect to the hosts page when they are off).

Every page here is wrapped in `operators_only` (staff, superusers, the operators group). The
image-demand API is not a page (it answers any login or API token): `panda/urls.py`."""

from __future__ import annotations

from django.urls import path

from clusterwatch.monitor.pages import alarm_views, views
from clusterwatch.monitor.pages.operator_guard import operators_only

urlpatterns = [
    path("hosts/", operators_only(views.host_list), name="monitor-hosts"),
    path("queues/", operators_only(views.queue_list), name="monitor-queues"),
    # `path`, not `str`: a queue name with a slash must still reach its page.
    path("queues/<path:queue>/", operators_only(views.queue_detail), name="monitor-queue"),
    path("jobs/", operators_only(views.job_lookup), name="monitor-jobs"),
    path("jobs/<int:pandaid>/", operators_only(views.job_detail), name="monitor-job"),
    # GET: the page; POST: its forms (staff only, alarm_views answers anyone else 403).
    path("alarms/", operators_only(alarm_views.alarm_list), name="monitor-alarms"),
    path("panda/worker-starts/", operators_only(views.worker_starts),
         name="monitor-worker-starts"),
]
