"""`GET /api/osg-image-demand/?memory_mb=4096&cores=1`: image demand as JSON.

Access as the usage API's (`core.asking`): a logged-in session, or `Authorization: Bearer
<API token>` (`clusterwatch monitor create_usage_token`), so an allocator script has a
revocable token of its own; host tokens (`cwh_`) are for reporters and never accepted here.
Answers: 200 the counts; 400 a bad parameter; 403 no login or token; 404 the PanDA view is off
(no CLUSTERWATCH_PANDA_DATABASE_URL); 503 the database down, slow or misconfigured; each JSON
but the bare 405 for a method other than GET and HEAD. The view is off only once the
database setting is read, after the asker and the parameters, as it always was.
"""

from __future__ import annotations

import os

import psycopg
from django.http import HttpRequest, JsonResponse
from django.utils import timezone

from clusterwatch.errors import ConfigError
from clusterwatch.monitor.core.refusals import Refusal, json_refusal
from clusterwatch.monitor.core.view_guard import Entry, guarded, reads_dates
from clusterwatch.monitor.panda.image_demand import BadParameter, image_demand, slot_of
from clusterwatch.monitor.panda.panda_db import failure_of
from clusterwatch.monitor.panda.panda_settings import panda_database


# Not private: the counts are the same for every asker (and they never were).
@reads_dates()
@guarded(json_refusal, entry=Entry.ASKER, private=False)
def osg_image_demand(request: HttpRequest) -> JsonResponse:
    try:
        slot = slot_of(request.GET)
    except BadParameter as exc:
        raise Refusal(400, str(exc)) from None
    try:
        database = panda_database(os.environ)
    except ConfigError as exc:
        raise Refusal(503, f"configuration error: {exc}") from None
    if database is None:
        raise Refusal(404, "the PanDA view is off: CLUSTERWATCH_PANDA_DATABASE_URL is not set")
    try:
        counts = image_demand(database, slot)
    except psycopg.Error as exc:
        raise Refusal(503, "the PanDA database could not be read: "
                           f"{failure_of(exc).reason}") from None
    return JsonResponse({
        "memory_mb": slot.memory_mb, "cores": slot.cores,
        "as_of": timezone.now().strftime("%Y-%m-%dT%H:%M:%SZ"),
        "activated_jobs": sum(count.jobs for count in counts),
        "images": [{"image": count.image, "jobs": count.jobs} for count in counts]})
