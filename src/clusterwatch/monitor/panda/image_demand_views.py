"""`GET /api/osg-image-demand/?memory_mb=4096&cores=1`: image demand as JSON.

Access as the usage API's: a logged-in session, or `Authorization: Bearer <usage token>`
(`clusterwatch monitor create_usage_token`), so an allocator script has a revocable token of
its own; host tokens (`cwh_`) are for reporters and never accepted here. Answers: 200 the
counts; 400 a bad parameter; 403 no login or token; 404 the PanDA view is off (no
CLUSTERWATCH_PANDA_DATABASE_URL); 503 the database down, slow or misconfigured. Always JSON.
"""

from __future__ import annotations

import os

import psycopg
from django.http import HttpRequest, JsonResponse
from django.utils import timezone
from django.views.decorators.http import require_safe

from clusterwatch.errors import ConfigError
from clusterwatch.monitor.panda.image_demand import BadParameter, image_demand, slot_of
from clusterwatch.monitor.panda.panda_db import _failure
from clusterwatch.monitor.panda.panda_settings import panda_database
from clusterwatch.monitor.usage.web.access import asker
from clusterwatch.monitor.usage.web.answers import LOGIN_NEEDED, json_error
from clusterwatch.monitor.usage.web.list_params import reads_dates


@reads_dates()
@require_safe
def osg_image_demand(request: HttpRequest) -> JsonResponse:
    if asker(request) is None:
        return json_error(403, LOGIN_NEEDED)
    try:
        slot = slot_of(request.GET)
    except BadParameter as exc:
        return json_error(400, str(exc))
    try:
        database = panda_database(os.environ)
    except ConfigError as exc:
        return json_error(503, f"configuration error: {exc}")
    if database is None:
        return json_error(404, "the PanDA view is off: CLUSTERWATCH_PANDA_DATABASE_URL is "
                               "not set")
    try:
        counts = image_demand(database, slot)
    except psycopg.Error as exc:
        return json_error(503, f"the PanDA database could not be read: {_failure(exc).reason}")
    return JsonResponse({
        "memory_mb": slot.memory_mb, "cores": slot.cores,
        "as_of": timezone.now().strftime("%Y-%m-%dT%H:%M:%SZ"),
        "activated_jobs": sum(count.jobs for count in counts),
        "images": [{"image": count.image, "jobs": count.jobs} for count in counts]})
