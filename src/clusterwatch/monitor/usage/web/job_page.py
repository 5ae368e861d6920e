"""What the job page shows, built from a UsageReport: the header, allocated vs used, the
warnings with their figures, the notes, the kinds of memory side by side, the plots.

Pure: the report in, plain text in frozen dataclasses out; the template lays them out and
escapes every value (a job's name is whatever its user wrote).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from clusterwatch.monitor.core.humanize import duration_text, size_text
from clusterwatch.monitor.usage.analysis.figures import ACCOUNTING
from clusterwatch.monitor.usage.analysis.summary_json import UsageDocument
from clusterwatch.monitor.usage.rendering.figures_text import (
    figure_lines,
    moment_text,
    warning_title,
)
from clusterwatch.monitor.usage.rendering.plot_metrics import METRICS, measured_metrics
from clusterwatch.monitor.usage.rendering.shown_text import shown
from clusterwatch.monitor.usage.rendering.sizes import DPI, PIE_SIZE_IN, PLOT_SIZE_IN
from clusterwatch.monitor.usage.rendering.summary_rows import NOT_MEASURED, SummaryRow, summary_rows
from clusterwatch.monitor.usage.usage_report import SERIES_NOT_MEASURED, UsageReport


@dataclass(frozen=True)
class WarningView:
    code: str
    title: str
    message: str
    advice: str
    figures: tuple[tuple[str, str], ...]  # (label, value with its unit)


@dataclass(frozen=True)
class MemoryKind:
    name: str
    value: str
    meaning: str


@dataclass(frozen=True)
class Image:
    url: str
    title: str
    alt: str
    width: int
    height: int


@dataclass(frozen=True)
class ReportPaths:
    """Where the page's drawings and documents are: the job's own paths (`OWN_PATHS`), or
    those under a share link's page (`ReportPaths(root)`), which has no JSON document."""

    root: str = ""  # "": the job's own paths

    def plot(self, jobid: str, metric: str) -> str:
        return f"{self.root}plot/{metric}" if self.root else f"/plot/{jobid}/{metric}"

    def pie(self, jobid: str) -> str:
        return f"{self.root}pie" if self.root else f"/pie/{jobid}/"

    def pdf(self, jobid: str) -> str:
        return f"{self.root}pdf" if self.root else f"/pdf/{jobid}"

    def json(self, jobid: str) -> str:
        return "" if self.root else f"/api/v1/jobs/{jobid}/usage"


OWN_PATHS = ReportPaths()


@dataclass(frozen=True)
class JobView:
    jobid: str
    name: str
    user: str
    account: str
    partition: str
    state: str
    running: bool
    start: str
    end: str
    elapsed: str
    time_limit: str
    samples: int
    kept: bool
    rows: tuple[SummaryRow, ...]
    warnings: tuple[WarningView, ...]
    notes: tuple[str, ...]
    memory: tuple[MemoryKind, ...]
    memory_source: str  # which of the kinds the memory row and the advice use
    plots: tuple[Image, ...]
    plots_note: str  # why there are no plots ("" when there are)
    pie: Optional[Image]
    pdf_url: str
    json_url: str  # "" where the page has no JSON document (a share link's)


def job_view(report: UsageReport, paths: ReportPaths = OWN_PATHS) -> JobView:
    d = report.document
    jobid = d["jobid"]
    plots = _plots(report, paths)
    limit = d["time_limit_s"]
    return JobView(
        # Names as every report shows them (shown_text): one line, no bidi controls, capped.
        jobid=jobid, name=shown(d.get("name", "")), user=shown(d["user"]),
        account=shown(d["account"]), partition=shown(d["partition"]), state=shown(d["state"]),
        running=d["running"],
        start=moment_text(d["start"], "not started"),
        end=moment_text(d["end"], "still running" if d["running"] else "not known"),
        elapsed=duration_text(d["elapsed_s"]) + (" so far" if d["running"] else ""),
        time_limit=duration_text(limit) if limit else "no limit",
        samples=d["samples"], kept=report.kept, rows=summary_rows(d),
        warnings=tuple(WarningView(w["code"], warning_title(w["code"]), w["message"],
                                   w["advice"], figure_lines(w["figures"]))
                       for w in d["warnings"]),
        notes=tuple(d["notes"]), memory=memory_kinds(d),
        memory_source=("Slurm's MaxRSS (the exporter measured no memory)"
                       if d["memory_source"] == ACCOUNTING
                       else "the job's own memory (RSS + shared memory)"),
        plots=plots, plots_note="" if plots else (report.series_note or SERIES_NOT_MEASURED),
        pie=_pie(d, paths),
        pdf_url=paths.pdf(jobid), json_url=paths.json(jobid))


def memory_kinds(document: UsageDocument) -> tuple[MemoryKind, ...]:
    """The four things called memory, each with its peak and what it means."""
    kinds = document["memory"]

    def size(key: str) -> str:
        value = kinds.get(key)
        return NOT_MEASURED if value is None else size_text(value)

    return (
        MemoryKind("The job's own memory (RSS + shared memory)", size("rss_and_shmem_peak_bytes"),
                   "What the job's processes held: their private memory plus shared memory "
                   "(/dev/shm). This is what the job needs, what the efficiency and the "
                   "advice use, and what to size --mem by."),
        MemoryKind("Page cache", size("page_cache_peak_bytes"),
                   "File data the kernel kept in memory while the job read and wrote files. "
                   "The kernel gives it back when memory runs short, so it needs no request."),
        MemoryKind("The cgroup's usage", size("cgroup_peak_bytes"),
                   "What Slurm's memory limit counts: the job's own memory plus its page "
                   "cache. It can reach the limit without harm: the cache is given back "
                   "first; a job is killed only when its own memory does not fit."),
        MemoryKind("Slurm's MaxRSS (sacct)", size("accounting_max_rss_bytes"),
                   "What sacct reports: the largest step's peak as Slurm sampled it. Under "
                   "cgroup v2 it is the cgroup's usage, page cache included, so it can be far "
                   "above the job's own memory; being sampled, it can also miss a short peak."),
    )


def _plots(report: UsageReport, paths: ReportPaths) -> tuple[Image, ...]:
    jobid = report.document["jobid"]
    width, height = (round(side * DPI) for side in PLOT_SIZE_IN)
    if report.series is None:
        names: tuple[str, ...] = ()
    elif report.plot_metrics is not None:
        names = report.plot_metrics  # listed when kept: only the scrape count was read
    else:
        names = measured_metrics(report.series)
    return tuple(
        Image(paths.plot(jobid, name), METRICS[name].title,
              f"{METRICS[name].title} of job {jobid} over its life", width, height)
        for name in names)


def _pie(document: UsageDocument, paths: ReportPaths) -> Optional[Image]:
    if document["cpu_user_s"] is None or document["cpu_system_s"] is None:
        return None
    width, height = (round(side * DPI) for side in PIE_SIZE_IN)
    jobid = document["jobid"]
    return Image(paths.pie(jobid), "User vs system CPU time",
                 f"Pie chart of job {jobid}'s CPU time: user vs system", width, height)
