"""The PanDA view's own path (mounted at the site root by `clusterwatch.monitor.site.urls`): the
image-demand API, which answers any login or API token, not only operators."""

from __future__ import annotations

from django.urls import path

from clusterwatch.monitor.panda import image_demand_views

urlpatterns = [
    path("api/osg-image-demand/", image_demand_views.osg_image_demand,
         name="osg-image-demand"),
]
