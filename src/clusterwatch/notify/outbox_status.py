"""What the status views (`watch status`, `alarms_status`) show of an outbox, JSON and text.

Both engines' views end with the same sections: each channel's queue, dead letters, back-off
and last outcomes, then the recent attempts. Written once here; each engine supplies only
its own words (what no channel means, how it says when an error happened, what to run
about dead letters).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import IO, Any, Callable, Optional, TypedDict

from clusterwatch.notify.event import Event, format_utc
from clusterwatch.notify.outbox import Outbox

RECENT_ATTEMPTS = 20  # attempts a status view lists (the outbox keeps more)


class ChannelSummary(TypedDict):
    pending: list[dict[str, Any]]  # events as JSON, in queue order
    dead_letters: list[dict[str, Any]]
    rate_limited_until: Optional[float]  # None: not waiting
    last_error: Optional[str]  # an error kind (`http_500`, `timeout`), never a body
    last_error_t: Optional[float]
    last_error_reply: Optional[str]  # the server's words with it, cleaned (SendResult.reply)
    last_success_t: Optional[float]
    # Why the dead letters were set aside ({"t", "error", "reply"}); None without any.
    rejection: Optional[dict[str, Any]]


class OutboxSections(TypedDict):
    channels: dict[str, ChannelSummary]
    recent_attempts: list[dict[str, Any]]


def outbox_sections(outbox: Outbox, now: float, recent: int = RECENT_ATTEMPTS
                    ) -> OutboxSections:
    """The JSON sections of a status view, in the order views print them."""
    return {
        "channels": {
            name: {
                "pending": [event.to_json() for event in outbox.pending(name)],
                "dead_letters": [event.to_json() for event in state.dead],
                "rate_limited_until": state.not_before if state.not_before > now else None,
                "last_error": state.last_error,
                "last_error_t": state.last_error_t,
                "last_error_reply": state.last_error_reply,
                "last_success_t": state.last_success_t,
                "rejection": (state.rejection.to_json()
                              if state.rejection is not None and state.dead else None),
            }
            for name, state in sorted(outbox.channels.items())
        },
        "recent_attempts": [attempt.to_json() for attempt in outbox.history[-recent:]],
    }


@dataclass(frozen=True)
class ChannelWording:
    """What one engine's status view says around the channel lines."""

    no_channels: str  # the line printed when no channel is configured
    when: Callable[[float], str] = format_utc  # how the time of the last error is said
    last_delivered: bool = False  # also say when the channel last acknowledged a batch
    dead_letter_advice: Optional[str] = None  # one line after the channels holding any


def write_channels(channels: Mapping[str, ChannelSummary], out: IO[str],
                   wording: ChannelWording) -> None:
    """One line per channel, then its queued and dead-lettered messages, one line each, and
    why the dead letters were set aside (the server's words, when it said any)."""
    if not channels:
        out.write(wording.no_channels + "\n")
    for name, channel in channels.items():
        state = f"{len(channel['pending'])} pending, {len(channel['dead_letters'])} dead letters"
        if channel["rate_limited_until"]:
            state += f", rate-limited until {format_utc(channel['rate_limited_until'])}"
        error, error_t = channel["last_error"], channel["last_error_t"]
        if error and error_t is not None:
            state += f", last error {error} at {wording.when(error_t)}"
            if channel["last_error_reply"]:
                state += f" ({channel['last_error_reply']})"
        if wording.last_delivered and channel["last_success_t"]:
            state += f", last delivered {wording.when(channel['last_success_t'])}"
        out.write(f"channel {name}: {state}\n")
        for label, events in (("pending", channel["pending"]), ("DEAD", channel["dead_letters"])):
            for event in events:
                out.write(f"  {label}: {Event.from_json(event).line()}\n")
        rejection = channel["rejection"]
        if rejection:
            said = f": {rejection['reply']}" if rejection.get("reply") else ""
            out.write(f"  rejected {rejection['error']} at {wording.when(rejection['t'])}"
                      f"{said}\n")
    if wording.dead_letter_advice and any(c["dead_letters"] for c in channels.values()):
        out.write(wording.dead_letter_advice + "\n")
