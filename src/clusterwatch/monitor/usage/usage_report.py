"""One job's usage report: the kept summary of an ended job, else accounting + Prometheus.

The document (summary_json.UsageDocument) is what every output shows: the API, the pages,
the PDF, the email. An ended job's document is kept in the database once its figures are
final (its end plus two scrape intervals: the exporter's last scrape has landed), so the
reports still answer after Prometheus' retention has dropped the series; the plots then say
that the series are gone.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Callable, Optional, cast

from django.utils import timezone

from clusterwatch.monitor.usage.accounting.interface import (
    Accounting,
    JobRecord,
    UnknownJob,
    check_jobid,
)
from clusterwatch.monitor.usage.accounting_source import accounting
from clusterwatch.monitor.usage.analysis.summary_json import (
    UsageDocument,
    kept_document,
)
from clusterwatch.monitor.usage.config import UsageConfig, get_config
from clusterwatch.monitor.usage.job_documents import (  # re-exported: callers read them here
    SERIES_NOT_MEASURED as SERIES_NOT_MEASURED,
)
from clusterwatch.monitor.usage.job_documents import FetchSeries, live_document
from clusterwatch.monitor.usage.job_documents import (
    MetricsUnavailable as MetricsUnavailable,
)
from clusterwatch.monitor.usage.metrics.prometheus_api import PrometheusError
from clusterwatch.monitor.usage.metrics.series import JobSeries, fetch_job_series
from clusterwatch.monitor.usage.models import KeptSummary
from clusterwatch.monitor.usage.rendering.plot_metrics import METRICS, measured_metrics

SERIES_GONE = ("The series of this job are gone: Prometheus' retention has dropped them. "
               "The figures were kept when the job ended.")
KEEP_AFTER_SCRAPES = 2

# (user name, account) of a job -> whether the asker may see it.
Visibility = Callable[[str, str], bool]


class NotVisible(UnknownJob):
    """The job exists but the asker may not see it: answered exactly as an unknown job."""


@dataclass(frozen=True)
class UsageReport:
    document: UsageDocument
    series: Optional[JobSeries]  # None: not available (series_note says why)
    series_note: Optional[str]
    kept: bool  # the document came from the kept summary
    # The metrics with a plot, as listed when the job was kept; None: measured_metrics of
    # `series` says (a job not kept yet, or kept before the list was). Ignored without series.
    plot_metrics: Optional[tuple[str, ...]] = None


def load_report(jobid: str, *, with_series: bool = True, visible: Optional[Visibility] = None,
                config: Optional[UsageConfig] = None, source: Optional[Accounting] = None,
                now: Optional[datetime] = None,
                fetch: FetchSeries = fetch_job_series,
                series_keys: Optional[Set[str]] = None,
                listing_plots: bool = False) -> UsageReport:
    """The report of `jobid`. InvalidJobId, UnknownJob (NotVisible when `visible` refuses),
    AccountingFailed/AccountingConfigError, MetricsUnavailable.

    `series_keys`: of a kept job, only these series are read (None: all; one plot needs one
    to four). A job not kept yet reads them all whatever it says: its analysis needs them.
    `listing_plots`: the caller needs only which plots the job has (the job page); a kept job
    that lists them reads just the scrape count, to tell whether its series are still there."""
    config = config or get_config()
    now = now or timezone.now()
    check_jobid(jobid)
    kept = _usable(KeptSummary.objects.filter(jobid=jobid).first())
    # Someone else's kept job is asked of accounting as an unknown one is: otherwise the time
    # taken, or a 404 where an unknown job gets a 503 while accounting is down, would tell
    # that it exists.
    if kept is None or not _may_see(visible, kept.document):
        job = (source or accounting(config)).job(jobid)
        _check_visible(visible, job.user, job.account, jobid)
        kept = _usable(KeptSummary.objects.filter(jobid=job.jobid).first())  # by its raw id
        if kept is None:
            return _live_report(job, config, now, fetch)
    document = cast(UsageDocument, kept.document)
    _check_visible(visible, document["user"], document["account"], jobid)
    if not with_series:
        return UsageReport(document, None, None, kept=True)
    plots = _listed_plots(kept)
    keys = frozenset() if listing_plots and plots is not None else series_keys
    series, note = _series_of_kept(document, config, fetch, keys)
    return UsageReport(document, series, note, kept=True, plot_metrics=plots)


def _usable(kept: Optional[KeptSummary]) -> Optional[KeptSummary]:
    # A damaged or older document counts as none: the job is reported again, and kept anew.
    return kept if kept is not None and kept_document(kept.document) is not None else None


def _listed_plots(kept: KeptSummary) -> Optional[tuple[str, ...]]:
    # A list damaged in the database counts as none: the series are read to find the plots.
    names = kept.plot_metrics
    if isinstance(names, list) and all(name in METRICS for name in names):
        return tuple(names)
    return None


def _check_visible(visible: Optional[Visibility], user: str, account: str, jobid: str) -> None:
    if visible is not None and not visible(user, account):
        raise NotVisible(jobid)


def _may_see(visible: Optional[Visibility], document: Mapping[str, Any]) -> bool:
    return visible is None or visible(str(document["user"]), str(document["account"]))


def _live_report(job: JobRecord, config: UsageConfig, now: datetime,
                 fetch: FetchSeries) -> UsageReport:
    live = live_document(job, config, now, fetch)
    if _final(job, config, now):
        _keep(job, live.document,
              measured_metrics(live.series) if live.summary.measured else ())
    return UsageReport(live.document, live.series, live.note, kept=False)


def _final(job: JobRecord, config: UsageConfig, now: datetime) -> bool:
    if job.running or job.end is None:
        return False
    return now >= job.end + timedelta(seconds=KEEP_AFTER_SCRAPES * config.scrape_interval_s)


def _keep(job: JobRecord, document: UsageDocument, plots: tuple[str, ...]) -> None:
    warnings = " ".join(w["code"] for w in document["warnings"])
    fields = {"user": job.user[:64], "account": job.account[:64], "state": job.state[:32],
              "start": job.start, "end": job.end,
              "cpu_efficiency": document["cpu_efficiency"],
              "memory_efficiency": document["memory_efficiency"],
              "warning_codes": warnings[:400], "document": dict(document),
              "plot_metrics": list(plots)}
    # Two workers may keep the same job at once: get_or_create inserts in a transaction of its
    # own and reads the other's row if it lost. No atomic block around it: one that read and
    # then wrote would fail with "database is locked" on SQLite when another process wrote
    # in between. Replacing a damaged document is one UPDATE, the same whoever does it.
    row, created = KeptSummary.objects.get_or_create(jobid=job.jobid, defaults=fields)
    if not created and kept_document(row.document) is None:  # damaged: replaced
        KeptSummary.objects.filter(id=row.id).update(**fields)


def _series_of_kept(document: Mapping[str, Any], config: UsageConfig,
                    fetch: FetchSeries, keys: Optional[Set[str]]
                    ) -> tuple[Optional[JobSeries], Optional[str]]:
    start, end = _moment(document.get("start")), _moment(document.get("end"))
    if not document.get("measured") or start is None or end is None:
        notes = document.get("notes") or [SERIES_NOT_MEASURED]
        return None, str(notes[-1])
    try:
        series = fetch(config.prometheus_url,
                       str(document.get("jobid_raw") or document["jobid"]), start, end,
                       scrape_interval_s=config.scrape_interval_s,
                       timeout_s=config.prometheus_timeout_s, keys=keys)
    except PrometheusError as exc:
        return None, (f"{exc.headline}, so the plots cannot be drawn now; the figures were "
                      "kept when the job ended.")
    if series.samples == 0 and not any(series.series.values()):
        return None, SERIES_GONE
    return series, None


def _moment(text: object) -> Optional[datetime]:
    if not isinstance(text, str):
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
