"""The pages' HTTP side: read the few rows a page needs, hand them to the pure builders.

Queries stay bounded whatever the history: a page reads the latest-record indexes that ingest
keeps (`LatestReport`, `LatestQueue`, `JobPush`), never scans `HostReport`.
"""

from __future__ import annotations

import os
from collections import defaultdict
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.db.models import Case, CharField, Value, When
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_safe

from clusterwatch.monitor.core.models import (
    HostReport,
    HostTokenKey,
    JobPush,
    LatestQueue,
    RegisteredHarvester,
)
from clusterwatch.monitor.pages.hosts_page import hosts_page
from clusterwatch.monitor.pages.hosts_query import latest_slim_records
from clusterwatch.monitor.pages.panda_job_page import (
    PushSeen,
    clean_queue_name,
    job_page,
    job_queue,
)
from clusterwatch.monitor.pages.queue_page import queue_page
from clusterwatch.monitor.pages.queue_query import serving, serving_and_registered
from clusterwatch.monitor.pages.stored import StoredRecord
from clusterwatch.monitor.pages.worker_starts_page import worker_starts_page
from clusterwatch.monitor.pages.worker_starts_query import latest_parts
from clusterwatch.monitor.panda.panda_job_rows import server_truth

BIGINT_MAX = 2**63 - 1  # JobPush.pandaid's range; a larger id cannot be stored, so is unknown
PUSHES_READ = 50


_REMOTE, _REPORTING = "registry: remote", "registry: reporting"


def _interval_s() -> int:
    return int(settings.REPORT_INTERVAL_S)


@require_safe
@login_required
def host_list(request: HttpRequest) -> HttpResponse:
    queues: dict[str, list[str]] = defaultdict(list)
    for key, queue in LatestQueue.objects.values_list("key", "queue"):
        queues[key].append(queue)
    # Active tokens and the harvester registry in one query (the page's query count is part
    # of its contract): a registration's "prefix" is its kind, which no token prefix can be.
    registry = RegisteredHarvester.objects.annotate(prefix=Case(
        When(remote=True, then=Value(_REMOTE)), default=Value(_REPORTING),
        output_field=CharField())).values_list("key", "prefix", "registered_at")
    tokens, registered = [], []
    for key, prefix, at in HostTokenKey.objects.filter(token__revoked_at__isnull=True).values_list(
            "key", "token__prefix", "token__created_at").union(registry, all=True):
        if prefix in (_REMOTE, _REPORTING):
            registered.append((key, prefix == _REMOTE, at))
        else:
            tokens.append((key, prefix, at))
    page = hosts_page(latest_slim_records(), queues, tokens, timezone.now(), _interval_s(),
                      registered)
    return render(request, "monitor/hosts.html", {"page": page})


@require_safe
@login_required
def queue_list(request: HttpRequest) -> HttpResponse:
    """All queues named in latest records; `?queue=NAME` (the nav form) goes to its page."""
    asked = clean_queue_name(request.GET.get("queue"))
    if asked is not None:
        return HttpResponseRedirect(reverse("monitor-queue", args=[asked]))
    served: dict[str, list[str]] = defaultdict(list)
    for queue, key in LatestQueue.objects.order_by("queue", "key").values_list("queue", "key"):
        served[queue].append(key)
    return render(request, "monitor/queues.html", {"served": sorted(served.items())})


@require_safe
@login_required
def queue_detail(request: HttpRequest, queue: str) -> HttpResponse:
    stored, registered = serving_and_registered(queue)
    if not stored:
        return render(request, "monitor/queue_unknown.html", {"queue": queue}, status=404)
    # `?reasons=KEY`: that harvester's panel lists every not-finished reason, from its whole
    # record (the stored slice holds only the reasons a panel shows by default).
    every_reason_of = request.GET.get("reasons")
    stored = [StoredRecord(one.key, one.report_id,
                           HostReport.objects.only("record").get(pk=one.report_id).record,
                           one.collected_at, one.received_at)
              if one.key == every_reason_of else one for one in stored]
    page = queue_page(queue, stored, timezone.now(), _interval_s(), every_reason_of, registered)
    return render(request, "monitor/queue.html", {"page": page})


@require_safe
@login_required
def job_lookup(request: HttpRequest) -> HttpResponse:
    """The job lookup form; `?pandaid=N` goes to the job's page."""
    raw = (request.GET.get("pandaid") or "").strip()
    # ASCII digits only: str.isdigit() also takes superscripts (int() refuses them: a 500)
    # and other scripts' digits (int() reads them: another job's page).
    if raw.isascii() and raw.isdigit() and 0 < int(raw) <= BIGINT_MAX:
        target = reverse("monitor-job", args=[int(raw)])
        queue_name = clean_queue_name(request.GET.get("queue"))
        if queue_name is not None:
            target += "?" + urlencode({"queue": queue_name})
        return HttpResponseRedirect(target)
    return render(request, "monitor/jobs.html", {"pandaid": raw, "invalid": bool(raw)},
                  status=400 if raw else 200)


@require_safe
@login_required
def job_detail(request: HttpRequest, pandaid: int) -> HttpResponse:
    pushes: list[PushSeen] = []
    if pandaid <= BIGINT_MAX:
        pushes = [PushSeen(key, workerid, queue_name, at) for key, workerid, queue_name, at in
                  JobPush.objects.filter(pandaid=pandaid).order_by("-at")
                  .values_list("key", "workerid", "queue", "at")[:PUSHES_READ]]
    asked = clean_queue_name(request.GET.get("queue"))
    truth = server_truth(os.environ, pandaid, timezone.now())  # None: PanDA view off
    server_queue = truth.queue_to_watch if truth is not None else None
    chosen = job_queue(pushes, asked, server_queue)
    stored = serving(chosen.queue) if chosen.queue is not None else []
    page = job_page(pandaid, pushes, asked, stored, timezone.now(), _interval_s(),
                    server_queue)
    return render(request, "monitor/job.html", {"page": page, "truth": truth},
                  status=404 if page.queue_unknown and page.queue_source == "asked" else 200)


@require_safe
@login_required
def worker_starts(request: HttpRequest) -> HttpResponse:
    """Every queue of every harvester; `?queue=NAME` only that queue."""
    only = clean_queue_name(request.GET.get("queue"))
    parts, registered = latest_parts()
    page = worker_starts_page(parts, only, registered)
    return render(request, "monitor/worker_starts.html", {"page": page, "only_queue": only})
