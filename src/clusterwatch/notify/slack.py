"""Slack incoming webhook: success is HTTP 200 with body `ok`, and nothing else."""

from __future__ import annotations

from collections.abc import Sequence

from clusterwatch.notify import channel as ch
from clusterwatch.notify.event import Event
from clusterwatch.notify.http import HttpPost, TransportError, post, post_json

# Answers after which the same message can never succeed: dead-letter it rather than block
# the queue. 400 covers invalid_payload and invalid_token, 404 no_service and
# channel_not_found, 410 channel_is_archived, 403 action_prohibited and invalid_token.
PERMANENT_STATUSES = frozenset({400, 401, 403, 404, 410, 413})


class SlackWebhook(ch.Channel):
    kind = "slack"
    max_batch = 10

    def __init__(
        self, name: str, webhook_url: str, timeout: float = 10.0, http_post: HttpPost = post
    ) -> None:
        super().__init__(name)
        self._url = webhook_url  # a secret: never logged, never in an error
        self._timeout = timeout
        self._post = http_post

    def __repr__(self) -> str:
        return f"SlackWebhook(name={self.name!r})"

    def send(self, events: Sequence[Event], now: float) -> ch.SendResult:
        payload = {"text": "\n".join(event.line() for event in events)}
        try:
            response = post_json(self._post, self._url, payload, self._timeout)
        except TransportError as exc:
            return ch.SendResult(ch.RETRY, exc.kind)
        body = response.text()
        if response.status == 200 and body == "ok":
            return ch.SendResult(ch.DELIVERED)
        if response.status == 429:
            retry_after = ch.parse_retry_after(response.headers.get("retry-after"))
            return ch.SendResult(ch.DEFER, "rate_limited", retry_after)
        error = f"http_{response.status}" + (f"_{_slack_word(body)}" if body else "")
        if response.status in PERMANENT_STATUSES:
            return ch.SendResult(ch.REJECTED, error)
        # 5xx, and any other answer (a 200 with another body included): keep the batch.
        return ch.SendResult(ch.RETRY, error)


def _slack_word(body: str) -> str:
    """Slack's error answers are one word (`no_service`); keep it only if it looks like one."""
    word = body.split()[0] if body else ""
    if len(word) <= 40 and word.replace("_", "").isalnum():
        return word
    return "unexpected_body"
