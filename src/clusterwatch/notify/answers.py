"""What an HTTP answer means for the batch it answered: one reading for every channel.

Any 2xx acknowledges the batch. 429 asks us to wait (`Retry-After`, see
`channel.parse_retry_after`). A 4xx other than 408, 425 and 429 says the same request will
never be accepted, so the batch is set aside rather than block the queue. Everything else
(5xx, 408, 425, a 1xx or 3xx) keeps the batch for the next run, and so does no answer at all.
A channel whose API says more (Slack acknowledges only 200 `ok`; a webhook's 503 may carry
`Retry-After`) changes the one step it reads differently, in a subclass.
"""

from __future__ import annotations

from typing import Optional

from clusterwatch.http_client import HttpPost, HttpResponse, TransportError, post_json
from clusterwatch.notify import channel as ch

# "Later" answers: sending the same request again may well succeed.
TRANSIENT_CLIENT_STATUSES = frozenset({408, 425, 429})


class AnswerRules:
    """The generic reading (Alertmanager's); subclasses override single steps."""

    # The error kind of a deferral; None: the status itself (`http_429`).
    rate_limited_error: Optional[str] = "rate_limited"

    def acknowledged(self, response: HttpResponse) -> bool:
        return 200 <= response.status < 300

    def asks_to_wait(self, response: HttpResponse) -> bool:
        return response.status == 429

    def refused_for_good(self, response: HttpResponse) -> bool:
        return 400 <= response.status < 500 and response.status not in TRANSIENT_CLIENT_STATUSES

    def error(self, response: HttpResponse) -> str:
        """A short kind safe to log and export: never the body as it came."""
        return f"http_{response.status}"

    def classify(self, response: HttpResponse) -> ch.SendResult:
        if self.acknowledged(response):
            return ch.SendResult(ch.DELIVERED)
        if self.asks_to_wait(response):
            wait = ch.parse_retry_after(response.headers.get("retry-after"))
            return ch.SendResult(ch.DEFER, self.rate_limited_error or self.error(response), wait)
        error = self.error(response)
        if self.refused_for_good(response):
            return ch.SendResult(ch.REJECTED, error)
        return ch.SendResult(ch.RETRY, error)


GENERIC = AnswerRules()


def post_batch(
    http_post: HttpPost, url: str, payload: object, timeout: float,
    rules: AnswerRules = GENERIC,
) -> ch.SendResult:
    """POST one batch as JSON and read the answer; no answer at all keeps the batch."""
    try:
        response = post_json(http_post, url, payload, timeout)
    except TransportError as exc:
        return ch.SendResult(ch.RETRY, exc.kind)
    return rules.classify(response)
