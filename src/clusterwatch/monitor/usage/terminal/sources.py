"""The two places `clusterwatch usage` gets documents from, behind one small interface.

- `MonitorSource`: the monitor's JSON API, proving who asks with a usage token file
  (`Authorization: Bearer`) or, where there is none, a fresh MUNGE credential per request
  (`Authorization: MUNGE`). Its answers are the API's documents, kept summaries included, so
  they outlive Prometheus' retention.
- `LocalSource`: accounting and Prometheus from this host, the monitor's own functions
  (usage/job_documents), no web stack.

Both raise `SourceError` (exit 1, one line) and `UnknownJob` (exit 1).
"""

from __future__ import annotations

import json
import math
import urllib.parse
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Optional, Protocol

from clusterwatch.errors import RunError
from clusterwatch.http_client import HttpResponse, TransportError, request
from clusterwatch.monitor.core.secrets import read_secret_file
from clusterwatch.monitor.usage.accounting.interface import (
    AccountingConfigError,
    AccountingError,
    UnknownJob,
)
from clusterwatch.monitor.usage.accounting_source import accounting
from clusterwatch.monitor.usage.analysis.arrays import array_document
from clusterwatch.monitor.usage.config import UsageConfig
from clusterwatch.monitor.usage.job_documents import (
    MetricsUnavailable,
    accounting_document,
    live_document,
)
from clusterwatch.monitor.usage.rendering.shown_text import one_line
from clusterwatch.monitor.usage.terminal.settings import MonitorSettings

MAX_ANSWER = 256 * 1024 * 1024  # a user's list of 2,000 documents is about 5 MB
USER_LIMIT = 2000  # the monitor's own bound on a user's list

Http = Callable[..., HttpResponse]


class SourceError(RunError):
    """The source failed (down, refused, answered garbage): one line, exit 1."""


class NotFound(UnknownJob):
    """The monitor has no such job the asker may see (it never says which of the two)."""

    def __init__(self, jobid: str) -> None:
        super().__init__(jobid)
        self.args = (f"the monitor has no job {jobid} that you may see",)


@dataclass
class JobList:
    documents: list[dict[str, Any]]
    cut: bool = False  # more jobs than the limit: these are the newest
    unreadable: list[str] = field(default_factory=list)  # reasons, one line each


class Source(Protocol):
    def job(self, jobid: str) -> dict[str, Any]: ...

    def array(self, array_id: str) -> Optional[dict[str, Any]]:
        """The array's document (analysis/arrays.array_document); None when it is no array."""
        ...

    def user_jobs(self, user: str, since: datetime) -> JobList: ...

    def report_url(self, jobid: str) -> Optional[str]: ...


class LocalSource:
    def __init__(self, config: UsageConfig, *, now: Optional[datetime] = None) -> None:
        self.config = config
        self._accounting = accounting(config)
        self._now = now

    def job(self, jobid: str) -> dict[str, Any]:
        try:
            record = self._accounting.job(jobid)
            return dict(live_document(record, self.config, self._clock()).document)
        except (UnknownJob, AccountingConfigError):
            raise
        except (AccountingError, MetricsUnavailable) as exc:
            raise SourceError(str(exc)) from None

    def array(self, array_id: str) -> Optional[dict[str, Any]]:
        try:
            tasks = self._accounting.array_tasks(array_id)
        except AccountingConfigError:
            raise
        except AccountingError as exc:
            raise SourceError(str(exc)) from None
        if not tasks:
            return None
        # Accounting's own figures per task: one query for the array, not 19 per task.
        return array_document(array_id, [accounting_document(task, self.config.thresholds)
                                         for task in tasks], self.config.thresholds)

    def user_jobs(self, user: str, since: datetime) -> JobList:
        try:
            listing = self._accounting.jobs_of_user(user, since, limit=USER_LIMIT)
        except AccountingConfigError:
            raise
        except AccountingError as exc:
            raise SourceError(str(exc)) from None
        # Exactly this name (sacct --user goes through the name service), as the monitor.
        documents = [dict(accounting_document(record, self.config.thresholds))
                     for record in listing if record.user == user]
        documents.sort(key=lambda d: (d["start"] or "9999", d["jobid"]), reverse=True)
        return JobList(documents, listing.cut, [u.reason for u in listing.unreadable])

    def report_url(self, jobid: str) -> Optional[str]:
        return None

    def _clock(self) -> datetime:
        return self._now or datetime.now(timezone.utc)


class MonitorSource:
    def __init__(self, settings: MonitorSettings, *, http: Http = request,
                 credential: Optional[Callable[[], str]] = None,
                 now: Optional[datetime] = None) -> None:
        self.settings = settings
        self._http = http
        self._credential = credential or self._default_credential
        self._now = now

    def job(self, jobid: str) -> dict[str, Any]:
        answer = self._get(f"/api/v1/jobs/{jobid}/usage", jobid)
        if not isinstance(answer, dict) or not isinstance(answer.get("jobid"), str):
            raise SourceError("the monitor's answer is not a usage document")
        return answer

    def array(self, array_id: str) -> Optional[dict[str, Any]]:
        try:
            answer = self._get(f"/api/v1/arrays/{array_id}/usage", array_id)
        except UnknownJob:
            return None
        tasks = answer.get("tasks") if isinstance(answer, dict) else None
        summary = answer.get("summary") if isinstance(answer, dict) else None
        if (not isinstance(tasks, list) or not all(isinstance(t, dict) for t in tasks)
                or not isinstance(summary, dict)):
            raise SourceError("the monitor's answer is not an array's document")
        return dict(answer)

    def user_jobs(self, user: str, since: datetime) -> JobList:
        days = min(max(math.ceil((self._clock() - since) / timedelta(days=1)), 1), 366)
        answer = self._get(f"/api/v1/users/{urllib.parse.quote(user, safe='')}"
                           f"?days={days}", None,
                           missing=f"the monitor has no user {user} whose jobs you may see")
        jobs = answer.get("jobs") if isinstance(answer, dict) else None
        if not isinstance(jobs, list) or not all(isinstance(j, dict) for j in jobs):
            raise SourceError("the monitor's answer is not a list of jobs")
        since_text = since.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")
        # The API counts whole days back: what started before `since` is not asked for.
        kept = [j for j in jobs if not j.get("start") or str(j["start"]) >= since_text]
        lost = answer.get("unreadable") or []
        return JobList(kept, bool(answer.get("cut")),
                       [one_line(str(u.get("reason", "")), 300) for u in lost
                        if isinstance(u, dict)])

    def report_url(self, jobid: str) -> Optional[str]:
        # Shown on the terminal: never with the credentials a URL may carry.
        parts = urllib.parse.urlsplit(self.settings.url)
        host = parts.hostname or ""
        netloc = (f"[{host}]" if ":" in host else host) + (f":{parts.port}" if parts.port
                                                           else "")
        base = urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))
        return f"{base}/usage/jobs/{jobid}/"

    def _get(self, path: str, jobid: Optional[str], *, missing: str = "") -> Any:
        """The answer's JSON; NotFound for a 404 about `jobid`, else SourceError (`missing`:
        what a 404 means here)."""
        headers = {"Accept": "application/json", "Authorization": self._authorization()}
        try:
            answer = self._http("GET", self.settings.url + path, headers=headers,
                                timeout=self.settings.timeout_s, max_body=MAX_ANSWER)
        except TransportError as exc:
            raise SourceError(f"the monitor did not answer: {exc.kind}") from None
        if answer.status == 404 and jobid is not None:
            raise NotFound(jobid)
        try:
            body = json.loads(answer.body)
        except ValueError:
            body = None
        if answer.status == 200:
            if body is None:
                raise SourceError("the monitor's answer is not JSON (is the URL its base?)")
            return body
        error = body.get("error") if isinstance(body, dict) else None
        # The monitor's words go to a terminal: on one line, without control characters.
        said = f": {one_line(error, 200)}" if isinstance(error, str) and error else ""
        if answer.status == 403:
            raise SourceError(f"the monitor refused the request{said}")
        if answer.status == 404:
            raise SourceError(missing or f"the monitor has no such page{said} (is the URL "
                              "its base?)")
        raise SourceError(f"the monitor answered HTTP {answer.status}{said}")

    def _authorization(self) -> str:
        if self.settings.token_file is not None:
            token = read_secret_file(str(self.settings.token_file),
                                     "CLUSTERWATCH_USAGE_TOKEN_FILE")
            return f"Bearer {token}"
        return f"MUNGE {self._credential()}"

    def _default_credential(self) -> str:
        from clusterwatch.monitor.usage.terminal.munge_credential import make_credential

        return make_credential(socket=self.settings.munge_socket)

    def _clock(self) -> datetime:
        return self._now or datetime.now(timezone.utc)

