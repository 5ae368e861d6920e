"""`/` when the usage reports are on: every path, its purpose, and a working link to each."""

from __future__ import annotations

from typing import Optional

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from clusterwatch.monitor.core.models import LatestReport
from clusterwatch.monitor.core.operators import is_operator
from clusterwatch.monitor.core.view_guard import Entry, Feature, guarded, reads_dates
from clusterwatch.monitor.usage.config import usage_enabled
from clusterwatch.monitor.usage.coordinators import coordinators_or_none
from clusterwatch.monitor.usage.models import KeptSummary
from clusterwatch.monitor.usage.web.page_views import LIST_HINTS, problem_page

INDEX_OFF = Feature(usage_enabled, lambda _request: redirect("monitor-hosts"))


@reads_dates()
@guarded(problem_page(LIST_HINTS), feature=INDEX_OFF, entry=Entry.LOGGED_IN)
def index(request: HttpRequest) -> HttpResponse:
    """The usage reports' index; the hosts page when they are off. Kept by no cache, as
    every usage answer: it links the asker's latest job, and the login redirect (to a
    personal `next`) is no one else's either."""
    name = request.user.get_username()
    mine = KeptSummary.objects.filter(user=name) if not request.user.is_staff \
        else KeptSummary.objects.all()
    latest: Optional[KeptSummary] = mine.order_by("-end").only("jobid").first()
    jobid = latest.jobid if latest is not None else None
    job = (lambda path: path.format(jobid=jobid)) if jobid else (lambda _path: None)
    paths = [
        ("/usage/users/<username>/", f"/usage/users/{name}/",
         "Your jobs: allocated and used side by side, sortable, filtered by state and time."),
        ("/usage/jobs/<jobid>/", job("/usage/jobs/{jobid}/"),
         "One job's report: what it asked for, what it used, the plots and the advice."),
        ("/api/v1/users/<username>", f"/api/v1/users/{name}",
         "JSON: your jobs with their summaries (?days=N, default 30)."),
        ("/api/v1/jobs/<jobid>/usage", job("/api/v1/jobs/{jobid}/usage"),
         "JSON: one job's figures and warnings (the same as `clusterwatch monitor job_usage`)."),
        ("/pdf/<jobid>", job("/pdf/{jobid}"),
         "The job's report as a PDF: the summary table, the warnings and every plot."),
        ("/pie/<jobid>/", job("/pie/{jobid}/"), "Pie chart: user vs system CPU time (PNG)."),
        ("/plot/<jobid>/<metric>", job("/plot/{jobid}/cpu"),
         "One metric over the job's life (PNG): cpu, memory, threads, open_files, read, "
         "write, gpu_utilization, gpu_memory."),
        ("/mail/<jobid>", job("/mail/{jobid}"), "The email sent to you when the job ended."),
    ]
    if request.user.is_staff:
        paths.append(("/usage/staff/", "/usage/staff/",
                      "Staff: the least efficient recent jobs of every user."))
        paths.append(("/usage/staff/running/", "/usage/staff/running/",
                      "Staff: the running jobs that idle or near their memory limit now "
                      "(usage_watch)."))
    if request.user.is_staff or coordinators_or_none().accounts_of(name):
        paths.append(("/usage/accounts/", "/usage/accounts/",
                      "Staff and account coordinators: each Slurm account's month, with the "
                      "three before and the most wasteful jobs and users."))
    return render(request, "usage/index.html", {
        "paths": paths, "example_jobid": jobid,
        "harvester": is_operator(request.user) and LatestReport.objects.exists(),
    })
