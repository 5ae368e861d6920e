"""`/alarms/` (included by `clusterwatch.monitor.urls`)."""

from __future__ import annotations

from django.urls import path

from clusterwatch.monitor.alarms import views

urlpatterns = [
    path("", views.alarm_list, name="monitor-alarms"),
]
