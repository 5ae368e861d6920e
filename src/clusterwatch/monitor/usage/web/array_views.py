"""GET /api/v1/arrays/<id>/usage: an array job as one summary and its tasks' documents.

The same document as `clusterwatch usage --json ID` computes on a login node
(analysis/arrays.array_document): each task's kept summary where it has one, else
accounting's own figures (one accounting call for the array, no Prometheus query per task).
An array whose tasks the asker may not all see is answered as an unknown job, byte for byte;
a kept summary whose user or account is not its task's (an older job of the same id) is not
used.
"""

from __future__ import annotations

from typing import Any, Optional

from django.http import HttpRequest

from clusterwatch.monitor.core.asking import LOGIN_NEEDED, asker
from clusterwatch.monitor.core.refusals import Refusal
from clusterwatch.monitor.core.view_guard import reads_dates
from clusterwatch.monitor.usage.accounting.interface import (
    AccountingError,
    InvalidJobId,
    JobRecord,
    check_array_id,
)
from clusterwatch.monitor.usage.accounting_source import accounting
from clusterwatch.monitor.usage.analysis.arrays import array_document
from clusterwatch.monitor.usage.analysis.summary_json import UsageDocument, kept_document
from clusterwatch.monitor.usage.config import get_config
from clusterwatch.monitor.usage.job_documents import accounting_document
from clusterwatch.monitor.usage.web.access import visibility
from clusterwatch.monitor.usage.web.report_answers import (
    NO_SUCH_JOB,
    accounting_refusal,
    json_view,
)
from clusterwatch.monitor.usage.web.user_jobs import kept_of


@reads_dates()
@json_view
def array_usage(request: HttpRequest, array_id: str) -> Any:
    user = asker(request)
    if user is None:
        raise Refusal(403, LOGIN_NEEDED)
    try:
        check_array_id(array_id)
    except InvalidJobId as exc:
        raise Refusal(400, str(exc)) from None
    config = get_config()
    try:
        tasks = accounting(config).array_tasks(array_id)
    except AccountingError as exc:
        raise accounting_refusal(exc) from None
    visible = visibility(user, config)
    if not tasks or not all(visible(task.user, task.account) for task in tasks):
        raise Refusal(404, NO_SUCH_JOB)
    kept = kept_of([task.jobid for task in tasks])
    documents = [_kept_of(task, kept.get(task.jobid))
                 or accounting_document(task, config.thresholds) for task in tasks]
    return array_document(array_id, documents, config.thresholds)


def _kept_of(task: JobRecord, stored: object) -> Optional[UsageDocument]:
    """The task's kept document, if it is this task's: a summary kept for an older job of
    the same id (ids start again after a reset of Slurm's database) is someone else's, and
    visibility was judged on accounting's task, not on it."""
    document = kept_document(stored)
    if document is None or (document["user"], document["account"]) != (task.user,
                                                                        task.account):
        return None
    return document
