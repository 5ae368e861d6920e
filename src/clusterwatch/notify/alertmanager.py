"""Alertmanager: POST /api/v2/alerts, one alert per target and check.

Alertmanager keeps alerts in memory only, so open alerts are re-stated every run (`refresh`)
with an `endsAt` a few runs ahead: a restarted Alertmanager learns them again, and if the
watch itself stops, they expire instead of firing forever. A recovery sets `endsAt` to the
detection time of the recovery.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

from clusterwatch.http_client import HttpPost, post
from clusterwatch.notify import channel as ch
from clusterwatch.notify.answers import post_batch
from clusterwatch.notify.event import Event, format_rfc3339
from clusterwatch.notify.incident import Action

ALERTNAME = "ClusterwatchTargetDown"
API_PATH = "/api/v2/alerts"
FIRING_TTL_S = 300.0  # endsAt of a firing alert: now + this; re-stated every run


class AlertmanagerChannel(ch.Channel):
    kind = "alertmanager"
    max_batch = 50

    def __init__(
        self,
        name: str,
        url: str,
        timeout: float = 10.0,
        extra_labels: Optional[dict[str, str]] = None,
        http_post: HttpPost = post,
        alertname: str = ALERTNAME,
    ) -> None:
        super().__init__(name)
        base = url.rstrip("/")
        self._endpoint = base if base.endswith(API_PATH) else base + API_PATH
        self._timeout = timeout
        self._extra_labels = dict(extra_labels or {})
        self._post = http_post
        self._alertname = alertname

    def send(self, events: Sequence[Event], now: float) -> ch.SendResult:
        return self._post_alerts([self.alert(event, now) for event in events])

    def refresh(self, firing: Sequence[Event], now: float) -> Optional[ch.SendResult]:
        if not firing:
            return None
        return self._post_alerts([self.alert(event, now) for event in firing])

    def alert(self, event: Event, now: float) -> dict[str, Any]:
        """The v2 API alert for `event`: labels identify the target and check."""
        labels = {
            **self._extra_labels,
            "alertname": self._alertname,
            "check": event.check,
            "target": event.name,
        }
        annotations = {
            "summary": event.line(),
            "status": event.status,
            "incident": event.incident,
        }
        if event.detail:
            annotations["description"] = event.detail
        alert: dict[str, Any] = {"labels": labels, "annotations": annotations}
        if event.action is Action.RECOVER:
            alert["endsAt"] = format_rfc3339(event.t)
        else:
            alert["startsAt"] = format_rfc3339(event.t)
            alert["endsAt"] = format_rfc3339(max(now, event.t) + FIRING_TTL_S)
        return alert

    def _post_alerts(self, alerts: list[dict[str, Any]]) -> ch.SendResult:
        # The generic reading: a bad alert, a wrong path or refused credentials (4xx) will
        # not change by sending the same request again.
        return post_batch(self._post, self._endpoint, alerts, self._timeout)
