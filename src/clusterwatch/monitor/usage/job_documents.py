"""A job's document made from its sources, the one way every output makes it.

The monitor (usage_report, user_jobs) and the terminal command (`clusterwatch usage`) call
these two functions, so the API, the pages, the email and the terminal never disagree. No
Django here: the terminal runs on a login node without the web stack.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Callable, Optional

from clusterwatch.monitor.usage.accounting.interface import JobRecord
from clusterwatch.monitor.usage.analysis import rules
from clusterwatch.monitor.usage.analysis.figures import UsageSummary, analyse
from clusterwatch.monitor.usage.analysis.summary_json import UsageDocument, usage_document
from clusterwatch.monitor.usage.analysis.thresholds import Thresholds
from clusterwatch.monitor.usage.config import UsageConfig
from clusterwatch.monitor.usage.metrics.prometheus_api import PrometheusError
from clusterwatch.monitor.usage.metrics.series import JobSeries, fetch_job_series

SERIES_NOT_MEASURED = "The exporter's series of this job are not available."

FetchSeries = Callable[..., JobSeries]


class MetricsUnavailable(Exception):
    """Prometheus is down, slow or answered garbage, and no kept summary stands in."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class LiveDocument:
    document: UsageDocument
    summary: UsageSummary
    series: Optional[JobSeries]  # None: not measured (`note` says why)
    note: Optional[str]


def accounting_document(job: JobRecord, thresholds: Thresholds) -> UsageDocument:
    """The document from accounting's own figures alone (a list's rows: no query per job)."""
    summary = analyse(job, None, thresholds)
    return usage_document(job, summary, rules.check(job, summary, thresholds))


def live_document(job: JobRecord, config: UsageConfig, now: datetime,
                  fetch: FetchSeries = fetch_job_series) -> LiveDocument:
    """The document from accounting and the job's series; MetricsUnavailable when the store
    fails (never a job that used nothing)."""
    series = None
    if job.start is not None:
        try:
            # By the job's own number: the exporter labels an array task 123_4 as 130.
            series = fetch(config.prometheus_url, job.jobid_raw or job.jobid, job.start,
                           job.end or now,
                           scrape_interval_s=config.scrape_interval_s,
                           timeout_s=config.prometheus_timeout_s)
        except PrometheusError as exc:
            raise MetricsUnavailable(exc.kind, f"{exc.headline}: {exc}") from None
        if series.samples == 0 and not any(series.series.values()):
            series = None  # nothing at all: "not measured", never a job that used nothing
    summary = analyse(job, series, config.thresholds)
    document = usage_document(job, summary, rules.check(job, summary, config.thresholds))
    note = None if summary.measured else (SERIES_NOT_MEASURED if series is None
                                          else summary.notes[-1])
    return LiveDocument(document, summary, series if summary.measured else None, note)
