"""A user's jobs with their summaries: /api/v1/users/<username> and the user page.

One accounting call for the list; each job's figures are its kept summary when there is
one, else accounting's own figures (no Prometheus call per job: a user with 1,000 jobs
must get their page at once). A job without a kept summary says so in its notes.

Bounded: accounting is asked for the newest LIMIT jobs of the period (read as a stream, so a
history of a million lines costs a worker the memory of LIMIT jobs), and only their kept
summaries are read. The answer says when it was cut and which lines were unreadable.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, Optional

from clusterwatch.monitor.usage.accounting.interface import Accounting, Unreadable
from clusterwatch.monitor.usage.accounting_source import accounting
from clusterwatch.monitor.usage.analysis.summary_json import UsageDocument, kept_document
from clusterwatch.monitor.usage.config import UsageConfig, get_config
from clusterwatch.monitor.usage.job_documents import accounting_document
from clusterwatch.monitor.usage.models import KeptSummary

LIMIT = 2000  # jobs of a user's list: the newest of the period
_KEPT_BATCH = 500  # job ids per query of the kept summaries (SQLite's bound on parameters)


class UserJobs(list[UsageDocument]):
    """The documents, newest first; `cut` when accounting had more than `limit` jobs in the
    period (these are the newest `limit`), `unreadable` the lines it could not read."""

    def __init__(self, documents: Iterable[UsageDocument], *, limit: int, cut: bool,
                 unreadable: Iterable[Unreadable]) -> None:
        super().__init__(documents)
        self.limit, self.cut, self.unreadable = limit, cut, list(unreadable)


def user_jobs(user: str, since: datetime, *, config: Optional[UsageConfig] = None,
              source: Optional[Accounting] = None, limit: Optional[int] = None) -> UserJobs:
    """The user's jobs since `since`, newest first (the newest `limit`, LIMIT by default).
    AccountingFailed/AccountingConfigError."""
    config = config or get_config()
    limit = LIMIT if limit is None else limit
    listing = (source or accounting(config)).jobs_of_user(user, since, limit=limit)
    # Only the jobs accounting files under exactly this name: sacct resolves --user through
    # the name service, which may ignore case (sssd) or read a number as a uid, so its answer
    # for `Alice` or `1000` can be alice's jobs.
    records = [record for record in listing if record.user == user]
    # The listed jobs' only, not every kept one of the period: a user with a million kept
    # jobs must not have them all read.
    kept = kept_of([record.jobid for record in records], user=user, end__gte=since)
    documents = []
    for record in records:
        document = kept_document(kept.get(record.jobid))  # damaged: accounting's figures
        if document is None:
            document = accounting_document(record, config.thresholds)
        documents.append(document)
    documents.sort(key=lambda d: (d["start"] or "9999", d["jobid"]), reverse=True)
    return UserJobs(documents, limit=limit, cut=listing.cut, unreadable=listing.unreadable)


def kept_of(jobids: Sequence[str], **narrowed: Any) -> dict[str, object]:
    """job id -> stored document of the kept summaries of `jobids` (and of `narrowed`'s
    filters), read in batches: SQLite bounds a query's parameters. Plain tuples: a model
    instance per kept job cost a third of a 1,000-job page."""
    kept: dict[str, object] = {}
    for first in range(0, len(jobids), _KEPT_BATCH):
        kept.update(KeptSummary.objects.filter(
            jobid__in=jobids[first:first + _KEPT_BATCH], **narrowed)
            .values_list("jobid", "document"))
    return kept
