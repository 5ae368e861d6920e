"""A user's jobs with their summaries: /api/v1/users/<username> and the user page.

One accounting call for the list; each job's figures are its kept summary when there is
one, else accounting's own figures (no Prometheus call per job: a user with 1,000 jobs
must get their page at once). A job without a kept summary says so in its notes.
"""

from __future__ import annotations

from datetime import datetime
from typing import Optional

from clusterwatch.monitor.usage import rules
from clusterwatch.monitor.usage.accounting import Accounting
from clusterwatch.monitor.usage.analysis import analyse
from clusterwatch.monitor.usage.config import UsageConfig, get_config
from clusterwatch.monitor.usage.models import KeptSummary
from clusterwatch.monitor.usage.sources import accounting
from clusterwatch.monitor.usage.summary_json import (
    UsageDocument,
    kept_document,
    usage_document,
)


def user_jobs(user: str, since: datetime, *, config: Optional[UsageConfig] = None,
              source: Optional[Accounting] = None) -> list[UsageDocument]:
    """The user's jobs since `since`, newest first. AccountingFailed/AccountingConfigError."""
    config = config or get_config()
    # Only the jobs accounting files under exactly this name: sacct resolves --user through
    # the name service, which may ignore case (sssd) or read a number as a uid, so its answer
    # for `Alice` or `1000` can be alice's jobs.
    records = [record for record in (source or accounting(config)).jobs_of_user(user, since)
               if record.user == user]
    # Plain tuples: a model instance per kept job cost a third of a 1,000-job page.
    kept = dict(KeptSummary.objects.filter(user=user, end__gte=since)
                .values_list("jobid", "document"))
    documents = []
    for record in records:
        document = kept_document(kept.get(record.jobid))  # damaged: accounting's figures
        if document is None:
            summary = analyse(record, None, config.thresholds)
            document = usage_document(record, summary,
                                      rules.check(record, summary, config.thresholds))
        documents.append(document)
    documents.sort(key=lambda d: (d["start"] or "9999", d["jobid"]), reverse=True)
    return documents
