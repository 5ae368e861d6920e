"""`/api/host-reports/<key>/`: POST a record, GET the key's latest record.

Order of the checks (each refusal stores nothing):

1. method: anything but GET or POST is 405;
2. the token (see `access.py`): 401 without a valid one, whatever the key; then 403 for a
   key bound to other tokens only, 404 for a key no active token is bound to;
3. POST only, the body: 413 over `MAX_RECORD_BYTES` (by Content-Length before reading, by
   Django's upload limit, or by the bytes read, a chunked body's included); 411 for a
   chunked body on a server that does not end its input with the body (gunicorn does);
   400 for a Content-Length that is no number or more than the bytes that came, for broken
   chunking, and for a body that is not UTF-8, not JSON, not an object, nested too deep,
   holding what no database stores, or failing the schema (with where and why); 403 when
   the record's `host` is not the URL's key (see `validation.check_record`); 400 `future`
   for a `collected_at` more than CLUSTERWATCH_MAX_CLOCK_SKEW_S ahead of the monitor's
   clock (see `horizon`);
4. stored: 201 `{"id", "key", "size_bytes", "collected_at", "latest"}`, where `latest` says
   whether it became the key's latest by `collected_at`; a record identical to one already
   stored for the key (a reporter retry, also one racing its first attempt on another
   worker) is 200 with `"duplicate": true` and the stored record's receipt.

A database that fails (locked, unreachable) is 503 with Retry-After, so the reporter keeps
the record and tries again; a value the database refuses is 400. No input is a 500. Tokens
and bodies are never logged. No session or CSRF: the token is the whole authentication.
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.db import DatabaseError, DataError
from django.http import HttpRequest, JsonResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt

from clusterwatch.monitor.core import sqlite_tuning
from clusterwatch.monitor.core.models import HostReport, LatestReport
from clusterwatch.monitor.ingest import access, body, horizon, store, validation
from clusterwatch.monitor.ingest.errors import Rejection
from clusterwatch.monitor.record.times import utc_text

log = logging.getLogger(__name__)

RETRY_AFTER_S = 30


@csrf_exempt
def host_reports(request: HttpRequest, key: str) -> JsonResponse:
    try:
        if request.method == "POST":
            return _post(request, key)
        if request.method == "GET":
            return _get(request, key)
        raise Rejection(405, "method", f"{request.method} is not allowed here; use GET or POST",
                        {"Allow": "GET, POST"})
    except Rejection as refused:
        return refused.response()
    except DataError as exc:
        # A value the checks let through but this database refuses (a column's range).
        log.warning("host report for %r refused by the database: %s", key[:128],
                    type(exc).__name__)
        return Rejection(400, "unstorable", "the database refused a value of this record"
                         ).response()
    except DatabaseError as exc:
        log.warning("host reports: database unavailable (%s)", type(exc).__name__)
        return Rejection(503, "unavailable", "the database is unavailable; try again later",
                         {"Retry-After": str(RETRY_AFTER_S)}).response()


def _post(request: HttpRequest, key: str) -> JsonResponse:
    token = access.authorize(request.headers.get("Authorization"), key)
    data = body.read_body(request, settings.MAX_RECORD_BYTES)
    record, odd_floats = body.parse_body(data)
    collected_at = validation.check_record(record, key)
    horizon.check_not_ahead(collected_at)
    digest = store.record_digest(record, odd_floats)
    duplicate = store.duplicate_of(key, collected_at, record, digest)
    if duplicate is None:
        try:
            with sqlite_tuning.write_lock():  # SQLite: queue the writers (see sqlite_tuning)
                report, latest = store.store_record(key, record, len(data), token=token,
                                                    digest=digest)
            return JsonResponse(_receipt(report, latest), status=201)
        except store.AlreadyStored as stored:  # an identical post won the race
            duplicate = stored.report
    return JsonResponse({**_receipt(duplicate, store.is_latest(duplicate)),
                         "duplicate": True}, status=200)


def _receipt(report: HostReport, latest: bool) -> dict[str, Any]:
    return {"id": report.pk, "key": report.key, "size_bytes": report.size_bytes,
            "collected_at": utc_text(report.collected_at), "latest": latest}


def _get(request: HttpRequest, key: str) -> JsonResponse:
    access.authorize(request.headers.get("Authorization"), key)
    latest = LatestReport.objects.filter(key=key).select_related("report").first()
    if latest is None:
        raise Rejection(404, "no_record", f"no record for key {key} yet")
    report = latest.report
    age = (timezone.now() - report.collected_at).total_seconds()
    return JsonResponse({
        "key": key, "id": report.pk, "collected_at": utc_text(report.collected_at),
        "received_at": utc_text(report.received_at), "age_s": round(age), "record": report.record,
    })

