"""Slack incoming webhook: success is HTTP 200 with body `ok`, and nothing else."""

from __future__ import annotations

from collections.abc import Sequence

from clusterwatch.http_client import HttpResponse
from clusterwatch.notify import channel as ch
from clusterwatch.notify.answers import AnswerRules, post_batch
from clusterwatch.notify.event import Event

# Answers after which the same message can never succeed: dead-letter it rather than block
# the queue. 400 covers invalid_payload and invalid_token, 404 no_service and
# channel_not_found, 410 channel_is_archived, 403 action_prohibited and invalid_token.
PERMANENT_STATUSES = frozenset({400, 401, 403, 404, 410, 413})


class SlackAnswers(AnswerRules):
    """Slack's reading: only 200 `ok` acknowledges; errors keep Slack's word.

    Only the statuses above refuse for good: any other answer (a 200 with another body,
    another 4xx) keeps the batch.
    """

    def acknowledged(self, response: HttpResponse) -> bool:
        return response.status == 200 and response.text() == "ok"

    def refused_for_good(self, response: HttpResponse) -> bool:
        return response.status in PERMANENT_STATUSES

    def error(self, response: HttpResponse) -> str:
        body = response.text()
        return f"http_{response.status}" + (f"_{_slack_word(body)}" if body else "")


ANSWERS = SlackAnswers()


class SlackWebhook(ch.SecretUrlChannel):
    kind = "slack"
    max_batch = 10

    def send(self, events: Sequence[Event], now: float) -> ch.SendResult:
        payload = {"text": "\n".join(event.line() for event in events)}
        return post_batch(self._post, self._url, payload, self._timeout, ANSWERS)


def _slack_word(body: str) -> str:
    """Slack's error answers are one word (`no_service`); keep it only if it looks like one."""
    word = body.split()[0] if body else ""
    if len(word) <= 40 and word.replace("_", "").isalnum():
        return word
    return "unexpected_body"
