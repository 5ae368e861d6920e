"""The usage reports' paths, at the site root when CLUSTERWATCH_PROMETHEUS_URL is set.

The original's endpoints are kept as they were (`api/v1/...`, `pdf/`, `pie/`, `plot/`,
`mail/`, `/`); the pages a researcher reads live under `usage/`. Job ids and metric names
are matched loosely here and checked by the views, so a malformed one gets a plain 400
rather than Django's 404 page.
"""

from __future__ import annotations

from django.urls import path

from clusterwatch.monitor.usage.web import (
    account_views,
    api_views,
    array_views,
    page_views,
    render_views,
    running_views,
    share_views,
    shared_views,
)
from clusterwatch.monitor.usage.web import (
    index_views as index_view,
)
from clusterwatch.monitor.usage.web import (
    mail_views as mail_view,
)

urlpatterns = [
    path("", index_view.index, name="usage-index"),
    path("api/v1/users/<str:username>", api_views.user_usage, name="usage-api-user"),
    path("api/v1/jobs/<str:jobid>/usage", api_views.job_usage, name="usage-api-job"),
    path("api/v1/arrays/<str:array_id>/usage", array_views.array_usage, name="usage-api-array"),
    path("usage/jobs/<str:jobid>/", page_views.job_page, name="usage-job"),
    path("usage/jobs/<str:jobid>/share", share_views.share, name="usage-job-share"),
    path("usage/shared/<str:token>/", shared_views.shared_page, name="usage-shared"),
    path("usage/shared/<str:token>/pdf", shared_views.shared_pdf, name="usage-shared-pdf"),
    path("usage/shared/<str:token>/pie", shared_views.shared_pie, name="usage-shared-pie"),
    path("usage/shared/<str:token>/plot/<str:metric>", shared_views.shared_plot,
         name="usage-shared-plot"),
    # Any other path under a link (a typo, `plot/`, no trailing slash): the links' one 404,
    # not Django's, whose request logger would write the path, token and all.
    path("usage/shared/<path:rest>", shared_views.no_such_path),  # in no access matrix
    path("usage/users/<str:username>/", page_views.user_page, name="usage-user"),
    path("usage/staff/", page_views.staff_page, name="usage-staff"),
    path("usage/staff/running/", running_views.running_page, name="usage-staff-running"),
    path("usage/accounts/", account_views.accounts_index, name="usage-accounts"),
    path("usage/accounts/<str:account>/", account_views.account_page, name="usage-account"),
    path("mail/<str:jobid>", mail_view.mail_page, name="usage-mail"),
    path("pdf/<str:jobid>", render_views.pdf, name="usage-pdf"),
    path("pie/<str:jobid>/", render_views.pie, name="usage-pie"),
    path("plot/<str:jobid>/<str:metric>", render_views.plot, name="usage-plot"),
]
