"""What a channel is, and the outcome of one attempt to send it a batch."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional

from clusterwatch.http_client import HttpPost, post
from clusterwatch.notify.event import Event

DELIVERED = "delivered"  # the channel acknowledged the batch: drop it from this channel's queue
RETRY = "retry"  # transient failure: keep the batch, try again next run
DEFER = "defer"  # rate limited: keep the batch and wait `retry_after` seconds
REJECTED = "rejected"  # permanent rejection: set the batch aside as dead letters

REPLY_LIMIT = 300  # characters of a server's own words kept with an error

DEFAULT_RETRY_AFTER_S = 60.0
MAX_RETRY_AFTER_S = 3600.0  # a longer wait would mute the channel; cap what a server asks


@dataclass(frozen=True)
class SendResult:
    outcome: str
    error: Optional[str] = None  # short kind safe to log and export, e.g. http_500, timeout
    retry_after: Optional[float] = None  # seconds, with DEFER
    # The server's own words about the error, for the status views: one line of at most
    # REPLY_LIMIT characters that the channel has cleaned of every secret (an SMTP server's
    # "550 5.1.1 <ops@example.org>: no such user"). None where a kind says it all. With
    # DELIVERED, an error says what went wrong on the way (a recipient refused).
    reply: Optional[str] = None

    @property
    def ok(self) -> bool:
        return self.outcome == DELIVERED


class Channel:
    """A destination for events. Subclasses implement `send`; `refresh` is optional."""

    kind = "channel"
    max_batch = 10

    def __init__(self, name: str) -> None:
        self.name = name

    def send(self, events: Sequence[Event], now: float) -> SendResult:
        raise NotImplementedError

    def refresh(self, firing: Sequence[Event], now: float) -> Optional[SendResult]:
        """Re-state the alerts still open (for receivers that forget, like Alertmanager).

        Called only when this channel's queue is empty, so a re-stated alert never
        overtakes its own queued recovery. Failures are not queued: the next run re-states.
        """
        return None


class SecretUrlChannel(Channel):
    """A channel that posts to one URL which is a secret (a webhook URL is a credential, and
    may embed a token): kept for the request alone, never in a repr, a log or an error."""

    def __init__(
        self, name: str, url: str, timeout: float = 10.0, http_post: HttpPost = post
    ) -> None:
        super().__init__(name)
        self._url = url
        self._timeout = timeout
        self._post = http_post

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


def parse_retry_after(value: Optional[str]) -> float:
    """Seconds from a Retry-After header; the default when absent or malformed.

    Only the delta-seconds form is used by Slack; an HTTP date counts as malformed. A wait
    longer than an hour is capped at an hour.
    """
    if value is None:
        return DEFAULT_RETRY_AFTER_S
    try:
        seconds = float(value.strip())
    except ValueError:
        return DEFAULT_RETRY_AFTER_S
    if not math.isfinite(seconds) or seconds < 0:
        return DEFAULT_RETRY_AFTER_S
    return min(seconds, MAX_RETRY_AFTER_S)
