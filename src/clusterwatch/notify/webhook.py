"""Generic JSON webhook: POST {"version": 1, "events": [...]}, any 2xx acknowledges."""

from __future__ import annotations

from collections.abc import Sequence

from clusterwatch.notify import channel as ch
from clusterwatch.notify.event import Event
from clusterwatch.notify.http import HttpPost, TransportError, post, post_json

# 408 and 429 say "later"; every other 4xx says this request will never be accepted.
TRANSIENT_CLIENT_STATUSES = frozenset({408, 425, 429})


class JsonWebhook(ch.Channel):
    kind = "webhook"
    max_batch = 10

    def __init__(
        self, name: str, url: str, timeout: float = 10.0, http_post: HttpPost = post
    ) -> None:
        super().__init__(name)
        self._url = url  # may embed a token: treated as a secret
        self._timeout = timeout
        self._post = http_post

    def __repr__(self) -> str:
        return f"JsonWebhook(name={self.name!r})"

    def send(self, events: Sequence[Event], now: float) -> ch.SendResult:
        payload = {
            "version": 1,
            "source": "clusterwatch",
            "events": [{**event.to_json(), "text": event.line()} for event in events],
        }
        try:
            response = post_json(self._post, self._url, payload, self._timeout)
        except TransportError as exc:
            return ch.SendResult(ch.RETRY, exc.kind)
        if 200 <= response.status < 300:
            return ch.SendResult(ch.DELIVERED)
        if response.status == 429 or (response.status == 503 and "retry-after" in response.headers):
            retry_after = ch.parse_retry_after(response.headers.get("retry-after"))
            return ch.SendResult(ch.DEFER, f"http_{response.status}", retry_after)
        if 400 <= response.status < 500 and response.status not in TRANSIENT_CLIENT_STATUSES:
            return ch.SendResult(ch.REJECTED, f"http_{response.status}")
        return ch.SendResult(ch.RETRY, f"http_{response.status}")
