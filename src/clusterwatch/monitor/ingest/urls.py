"""The ingest API, mounted under `api/` by the monitor's URL map."""

from __future__ import annotations

from django.urls import path

from clusterwatch.monitor.ingest import views

app_name = "ingest"
urlpatterns = [
    path("host-reports/<str:key>/", views.host_reports, name="host-reports"),
    # Without the slash too: APPEND_SLASH cannot redirect a POST (Django raises in DEBUG),
    # and the reporter follows no redirect anyway.
    path("host-reports/<str:key>", views.host_reports),
]
