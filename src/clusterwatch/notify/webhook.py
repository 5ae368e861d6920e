"""Generic JSON webhook: POST {"version": 1, "events": [...]}, any 2xx acknowledges."""

from __future__ import annotations

from collections.abc import Sequence

from clusterwatch.http_client import HttpResponse
from clusterwatch.notify import channel as ch
from clusterwatch.notify.answers import AnswerRules, post_batch
from clusterwatch.notify.event import Event


class WebhookAnswers(AnswerRules):
    """The generic reading, except that a 503 with `Retry-After` is a deferral too."""

    rate_limited_error = None  # the status says which of the two asked us to wait

    def asks_to_wait(self, response: HttpResponse) -> bool:
        return response.status == 429 or (
            response.status == 503 and "retry-after" in response.headers
        )


ANSWERS = WebhookAnswers()


class JsonWebhook(ch.SecretUrlChannel):
    kind = "webhook"
    max_batch = 10

    def send(self, events: Sequence[Event], now: float) -> ch.SendResult:
        payload = {
            "version": 1,
            "source": "clusterwatch",
            "events": [{**event.to_json(), "text": event.line()} for event in events],
        }
        return post_batch(self._post, self._url, payload, self._timeout, ANSWERS)
