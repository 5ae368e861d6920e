"""The persistent outbox: queued events, each channel's position, back-off and dead letters.

The caller saves the outbox (durably) after appending events and before `deliver`, and
again after it: a crash in between re-sends, so delivery is at-least-once, never at-most-once.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional

from clusterwatch.notify import channel as ch
from clusterwatch.notify.event import Event
from clusterwatch.notify.incident import Action

log = logging.getLogger(__name__)

HISTORY_LIMIT = 200  # recent delivery attempts kept for `status`
# What the log tells an operator to do about dead letters. Each engine passes its own, naming
# its own commands; this plain one is for callers that have none.
DEAD_LETTER_HINT = "fix the channel, then queue them again"


@dataclass(frozen=True)
class Rejection:
    """Why the channel last set a batch aside: when, the error kind, the server's words."""

    t: float
    error: Optional[str]
    reply: Optional[str] = None

    def to_json(self) -> dict[str, Any]:
        return {"t": self.t, "error": self.error, "reply": self.reply}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Rejection:
        return cls(t=float(data["t"]), error=data.get("error"), reply=data.get("reply"))


@dataclass
class ChannelState:
    cursor: int = 0  # every event with seq <= cursor is done for this channel
    not_before: float = 0.0  # rate-limit back-off, persisted across runs
    dead: list[Event] = field(default_factory=list)  # permanently rejected, kept for operators
    last_error: Optional[str] = None
    last_error_t: Optional[float] = None
    last_success_t: Optional[float] = None
    last_error_reply: Optional[str] = None  # the server's words with last_error, if any
    # The last rejection while dead letters are kept: a later error of another kind does not
    # hide why they were set aside. Left out of the JSON when None (older files load).
    rejection: Optional[Rejection] = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "cursor": self.cursor,
            "not_before": self.not_before,
            "dead": [event.to_json() for event in self.dead],
            "last_error": self.last_error,
            "last_error_t": self.last_error_t,
            "last_success_t": self.last_success_t,
        }
        if self.last_error_reply is not None:
            data["last_error_reply"] = self.last_error_reply
        if self.rejection is not None:
            data["rejection"] = self.rejection.to_json()
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ChannelState:
        rejection = data.get("rejection")
        return cls(
            cursor=int(data.get("cursor", 0)),
            not_before=float(data.get("not_before", 0.0)),
            dead=[Event.from_json(item) for item in data.get("dead", [])],
            last_error=data.get("last_error"),
            last_error_t=data.get("last_error_t"),
            last_success_t=data.get("last_success_t"),
            last_error_reply=data.get("last_error_reply"),
            rejection=Rejection.from_json(rejection) if rejection else None,
        )


@dataclass
class Attempt:
    """One delivery attempt, for the history that `status` shows."""

    t: float
    channel: str
    outcome: str
    seqs: list[int]
    error: Optional[str] = None
    reply: Optional[str] = None  # the server's words (SendResult.reply), if any

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"t": self.t, "channel": self.channel, "outcome": self.outcome,
                                "seqs": self.seqs, "error": self.error}
        if self.reply is not None:
            data["reply"] = self.reply
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Attempt:
        reply = data.get("reply")
        return cls(t=float(data["t"]), channel=str(data["channel"]),
                   outcome=str(data["outcome"]), seqs=[int(s) for s in data["seqs"]],
                   error=data.get("error"), reply=reply if isinstance(reply, str) else None)


@dataclass
class Outbox:
    events: list[Event] = field(default_factory=list)  # in seq order
    next_seq: int = 1
    channels: dict[str, ChannelState] = field(default_factory=dict)
    history: list[Attempt] = field(default_factory=list)
    only_for: dict[int, str] = field(default_factory=dict)  # seq -> the one channel it is for

    def append(
        self, t: float, action: Action, target: str, status: str, incident: str,
        detail: str = "",
    ) -> Event:
        event = Event(self.next_seq, t, action, target, status, incident, detail)
        self.next_seq += 1
        self.events.append(event)
        return event

    def attach(self, names: Iterable[str], firing: Sequence[Event] = ()) -> None:
        """Track exactly these channels; a removed channel's queue is dropped.

        A new channel starts after the queued events (adding one does not replay history
        to it) but is told about every incident still open (`firing`): those alerts are
        queued for it alone, with their original detection time and incident id.
        """
        wanted = list(names)
        for name in wanted:
            if name not in self.channels:
                self.channels[name] = ChannelState(cursor=self.next_seq - 1)
                for alert in firing:
                    event = self.append(alert.t, alert.action, alert.target, alert.status,
                                        alert.incident, alert.detail)
                    self.only_for[event.seq] = name
        for name in list(self.channels):
            if name not in wanted:
                dropped = self.channels.pop(name)
                log.warning("channel %s is no longer configured: dropping its %d queued and "
                            "%d dead-lettered message(s)", name, len(self.pending_for(name,
                            dropped)), len(dropped.dead))

    def pending(self, name: str) -> list[Event]:
        return self.pending_for(name, self.channels[name])

    def pending_for(self, name: str, state: ChannelState) -> list[Event]:
        return [
            event for event in self.events
            if event.seq > state.cursor and self.only_for.get(event.seq, name) == name
        ]

    def compact(self) -> None:
        """Forget events that every channel is done with."""
        self.events = [event for event in self.events if not self._done(event)]
        kept = {event.seq for event in self.events}
        self.only_for = {seq: name for seq, name in self.only_for.items() if seq in kept}

    def _done(self, event: Event) -> bool:
        only = self.only_for.get(event.seq)
        names = [only] if only is not None else list(self.channels)
        return all(
            name not in self.channels or self.channels[name].cursor >= event.seq
            for name in names
        )

    def requeue_dead(self, name: Optional[str] = None) -> int:
        """Queue dead letters again (after the operator fixed the channel).

        Each comes back as a new event that keeps its detection time and incident id and
        is meant for the channel that rejected it alone: the others already have it.
        """
        count = 0
        for channel_name, state in self.channels.items():
            if name is not None and channel_name != name:
                continue
            for dead in state.dead:
                event = self.append(dead.t, dead.action, dead.target, dead.status,
                                    dead.incident, dead.detail)
                self.only_for[event.seq] = channel_name
                count += 1
            state.dead = []
            state.rejection = None
        return count

    def to_json(self) -> dict[str, Any]:
        return {
            "next_seq": self.next_seq,
            "events": [event.to_json() for event in self.events],
            "channels": {name: state.to_json() for name, state in self.channels.items()},
            "history": [attempt.to_json() for attempt in self.history],
            "only_for": {str(seq): name for seq, name in self.only_for.items()},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Outbox:
        return cls(
            events=[Event.from_json(item) for item in data.get("events", [])],
            next_seq=int(data.get("next_seq", 1)),
            channels={name: ChannelState.from_json(state)
                      for name, state in data.get("channels", {}).items()},
            history=[Attempt.from_json(item) for item in data.get("history", [])],
            only_for={int(seq): str(name) for seq, name in data.get("only_for", {}).items()},
        )


def deliver(
    outbox: Outbox,
    channels: Sequence[ch.Channel],
    now: float,
    firing: Sequence[Event] = (),
    dead_letter_hint: str = DEAD_LETTER_HINT,
) -> dict[str, ch.SendResult]:
    """One delivery pass: at most one batch per channel, each channel on its own.

    `firing` holds the alert events of the incidents still open. Channels that forget
    (Alertmanager) get them re-stated every run in which they answer, except for targets
    with an event in the batch just sent or still queued: the queue speaks for those, and
    a re-stated alert must not overtake the queued recovery of an earlier incident.
    """
    results: dict[str, ch.SendResult] = {}
    for channel in channels:
        state = outbox.channels[channel.name]
        if state.not_before > now + ch.MAX_RETRY_AFTER_S:
            # Saved before the clock stepped back: no server asks for a wait this long.
            state.not_before = 0.0
        if now < state.not_before:
            log.info("channel %s: rate-limited for %.0f s more", channel.name,
                     state.not_before - now)
            continue
        pending = outbox.pending(channel.name)
        batch = pending[: channel.max_batch]
        if batch:
            result = _send_batch(outbox, state, channel, batch, now, dead_letter_hint)
            results[channel.name] = result
            if not result.ok:
                continue
        spoken_for = {event.target for event in pending}
        restate = [event for event in firing if event.target not in spoken_for]
        refreshed = _refresh(channel, restate, now) if restate else None
        if refreshed is not None and refreshed.ok:
            state.last_success_t = now
        elif refreshed is not None:
            _record_error(state, channel.name, refreshed, now)
            if refreshed.outcome == ch.DEFER and refreshed.retry_after is not None:
                state.not_before = now + refreshed.retry_after
    outbox.compact()
    return results


def _refresh(
    channel: ch.Channel, firing: Sequence[Event], now: float
) -> Optional[ch.SendResult]:
    try:
        return channel.refresh(firing, now)
    except Exception as exc:  # a channel bug must not stop the other channels
        log.exception("channel %s: unexpected failure re-stating open alerts (%s)",
                      channel.name, type(exc).__name__)
        return ch.SendResult(ch.RETRY, "internal_error")


def _send_batch(
    outbox: Outbox, state: ChannelState, channel: ch.Channel, batch: list[Event], now: float,
    dead_letter_hint: str,
) -> ch.SendResult:
    try:
        result = channel.send(batch, now)
    except Exception as exc:  # a channel bug must not stop the other channels
        log.exception("channel %s: unexpected failure (%s)", channel.name, type(exc).__name__)
        result = ch.SendResult(ch.RETRY, "internal_error")
    seqs = [event.seq for event in batch]
    outbox.history.append(Attempt(now, channel.name, result.outcome, seqs, result.error,
                                  result.reply))
    del outbox.history[:-HISTORY_LIMIT]
    if result.outcome == ch.DELIVERED:
        state.cursor = batch[-1].seq
        state.last_success_t = now
        if result.error is not None:  # delivered, yet something was refused on the way
            _record_error(state, channel.name, result, now)
            log.warning("channel %s: delivered %d event(s), but %s", channel.name,
                        len(batch), _said(result))
        else:
            log.info("channel %s: delivered %d event(s)", channel.name, len(batch))
    elif result.outcome == ch.REJECTED:
        state.cursor = batch[-1].seq
        state.dead.extend(batch)
        _record_error(state, channel.name, result, now)
        state.rejection = Rejection(now, result.error, result.reply)
        log.error("channel %s: permanently rejected (%s); %d event(s) set aside as dead "
                  "letters, %s", channel.name, _said(result), len(batch), dead_letter_hint)
    else:
        if result.outcome == ch.DEFER:
            state.not_before = now + (
                ch.DEFAULT_RETRY_AFTER_S if result.retry_after is None else result.retry_after
            )
        _record_error(state, channel.name, result, now)
        log.warning("channel %s: not delivered (%s); %d event(s) stay queued",
                    channel.name, _said(result), len(outbox.pending(channel.name)))
    return result


def _said(result: ch.SendResult) -> str:
    """The error kind, and the server's words when there are any."""
    return f"{result.error}: {result.reply}" if result.reply else str(result.error)


def _record_error(state: ChannelState, name: str, result: ch.SendResult, now: float) -> None:
    state.last_error = result.error
    state.last_error_t = now
    state.last_error_reply = result.reply
