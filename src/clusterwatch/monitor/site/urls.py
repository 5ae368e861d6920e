"""URL map: the ingest API, the operators' pages, the image-demand API, login, the staff-only
admin, and the usage reports (their paths answer 404 unless CLUSTERWATCH_PROMETHEUS_URL is
set; `/` is their index then, else a redirect to the hosts page)."""

from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/", include("clusterwatch.monitor.ingest.urls")),
    path("", include("clusterwatch.monitor.usage.web.urls")),
    path("", include("clusterwatch.monitor.pages.urls")),
    path("", include("clusterwatch.monitor.panda.urls")),
]
