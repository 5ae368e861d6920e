"""URL map: the ingest API, the operators' pages, login and the staff-only admin."""

from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/", include("clusterwatch.monitor.ingest.urls")),
    path("", include("clusterwatch.monitor.pages.urls")),
]
