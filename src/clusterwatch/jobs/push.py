"""Pushgateway mode, for sites that ran the original exporter (push to the node's gateway).

Each job is one group, `job=<job>`, `instance=<node>`, `jobid=<id>`, replaced (PUT) at every
push; the exporter's own metrics are the group without `jobid`. The groups of jobs that
ended are deleted: those the gateway lists (`/api/v1/metrics`) for this job and instance
that were not pushed now, so groups left by a previous run are cleaned too; when the
listing fails, those pushed by this process earlier. The gateway never forgets a group by
itself, so pushing without deleting would keep finished jobs forever.
"""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Sequence
from typing import Callable

from prometheus_client import CollectorRegistry, delete_from_gateway, push_to_gateway
from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from clusterwatch.jobs.exporter import JobsCollector
from clusterwatch.jobs.metric_families import job_families

log = logging.getLogger(__name__)

TIMEOUT_S = 10.0
# Pushes go to a gateway on the node or the site network: never through a proxy from the
# environment (a forgotten http_proxy would send them away or fail).
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))
Handler = Callable[[], None]


class PushError(Exception):
    """The gateway refused a push or could not be reached; the message says which."""


def _http_handler(url: str, method: str, timeout: float | None,
                  headers: list[tuple[str, str]], data: bytes) -> Handler:
    """prometheus_client's handler seam: every request to the gateway goes through here."""

    def send() -> None:
        # S310: Pusher admits only http and https gateway URLs.
        request = urllib.request.Request(url, data=data or None, method=method)  # noqa: S310
        for name, value in headers:
            request.add_header(name, value)
        with _OPENER.open(request, timeout=timeout) as response:
            if response.status >= 400:
                raise OSError(f"HTTP {response.status}")

    return send


class _Fixed(Collector):
    def __init__(self, families: Sequence[Metric]) -> None:
        self.families = list(families)

    def collect(self) -> Iterable[Metric]:
        return self.families


class Pusher:
    def __init__(self, collector: JobsCollector, gateway: str, instance: str,
                 job: str = "jobs_exporter") -> None:
        parts = urllib.parse.urlsplit(gateway)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"the gateway must be an http(s) URL, got {gateway!r}")
        self.collector = collector
        self.gateway = gateway.rstrip("/")
        self.instance = instance
        self.job = job
        self._pushed: set[str] = set()

    def push_once(self) -> tuple[int, int]:
        """Push every job's group and delete ended ones; (pushed, deleted). Raises PushError."""
        samples, own = self.collector.collect_samples()
        current = {sample.jobid for sample in samples}
        for sample in samples:
            self._put(list(job_families([sample])), {"jobid": sample.jobid})
        self._put(own, {})
        stale = self._listed_jobids()
        if stale is None:
            stale = set(self._pushed)
        deleted = 0
        for jobid in sorted(stale - current):
            self._delete({"jobid": jobid})
            deleted += 1
        self._pushed = current
        return len(samples), deleted

    def _grouping(self, extra: dict[str, str]) -> dict[str, str]:
        return {"instance": self.instance, **extra}

    def _put(self, families: Sequence[Metric], extra: dict[str, str]) -> None:
        registry = CollectorRegistry()
        registry.register(_Fixed(families))
        try:
            push_to_gateway(self.gateway, self.job, registry, self._grouping(extra),
                            timeout=TIMEOUT_S, handler=_http_handler)
        except (OSError, ValueError) as exc:
            raise PushError(f"push to {self.gateway} {extra or 'exporter'} failed: "
                            f"{_reason(exc)}") from exc

    def _delete(self, extra: dict[str, str]) -> None:
        try:
            delete_from_gateway(self.gateway, self.job, self._grouping(extra),
                                timeout=TIMEOUT_S, handler=_http_handler)
        except (OSError, ValueError) as exc:
            raise PushError(f"deleting group {extra} at {self.gateway} failed: "
                            f"{_reason(exc)}") from exc

    def _listed_jobids(self) -> set[str] | None:
        """Job IDs of this job's and instance's groups on the gateway; None if unlistable."""
        try:
            with _OPENER.open(f"{self.gateway}/api/v1/metrics", timeout=TIMEOUT_S) as response:
                answer = json.loads(response.read())
            groups = answer["data"]
            found = set()
            for group in groups:
                labels = group.get("labels", {})
                if (labels.get("job") == self.job and labels.get("instance") == self.instance
                        and labels.get("jobid")):
                    found.add(str(labels["jobid"]))
            return found
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            log.warning("cannot list the groups on %s (%s); deleting only the jobs this "
                        "process pushed", self.gateway, _reason(exc))
            return None


def _reason(exc: Exception) -> str:
    if isinstance(exc, urllib.error.HTTPError):
        body = exc.read(300).decode("utf-8", "replace").strip()
        return f"HTTP {exc.code} {body}".strip()
    if isinstance(exc, urllib.error.URLError):
        return str(exc.reason)
    return str(exc)
