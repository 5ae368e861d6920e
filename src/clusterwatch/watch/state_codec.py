"""The state file's JSON read item by item: every valid item is kept, every bad one named.

A bad value in one target's record is that target's problem: its record is reset (an
incident that still reads whole is kept) and every other target goes on as before. The
outbox is read event by event and channel by channel. When the outbox lost anything, the
open incidents are announced again and channels whose positions were lost start before the
oldest kept event: whether a channel heard of them is unknown, and delivery is at least
once, never at most once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Optional

from clusterwatch.notify.event import Event
from clusterwatch.notify.incident import Action
from clusterwatch.notify.outbox import Attempt, ChannelState, Outbox, Rejection
from clusterwatch.notify.silences import Silence
from clusterwatch.watch.decisions import Incident, TargetRecord

# Epoch seconds far beyond any clock, yet a bound that also refuses NaN, inf and 400-digit ints.
_TIME_BOUND = 1e15
_NUMBER = (float, int)  # bool is neither by `type`
_TIME_TYPES = frozenset({float, int, type(None)})
_EVENT_TEXT = ("action", "target", "status", "incident")
_ACTION_WORDS = frozenset(action.value for action in Action)


SECTIONS = {"targets": "the target records", "outbox": "the outbox",
            "last_poll": "the last poll's summary"}


@dataclass
class Decoded:
    records: dict[str, TargetRecord] = field(default_factory=dict)
    outbox: Outbox = field(default_factory=Outbox)
    last_poll: dict[str, Any] = field(default_factory=dict)
    silences: list[Silence] = field(default_factory=list)  # absent before silences: none
    problems: list[str] = field(default_factory=list)  # what was dropped or reset, and why
    original: bool = False  # read from the original pool-watch script's format


def decode(data: dict[str, Any], channel_names: Sequence[str] = (),
           salvaged: bool = False) -> Decoded:
    """A state from its parsed sections; `channel_names` are the configured channels.

    `salvaged`: the sections come from a file that did not read whole, so entries may have
    gone missing without a trace.
    """
    decoded = Decoded()
    for key, what in SECTIONS.items():
        if key not in data:
            decoded.problems.append(f"{what} could not be read")
    decoded.records = records_from_rows(data.get("targets", {}), decoded.problems)
    decoded.outbox = _outbox(data.get("outbox", {"next_seq": 1, "channels": {}}), decoded,
                             channel_names, salvaged)
    decoded.last_poll = _last_poll(data.get("last_poll", {}), decoded.problems)
    decoded.silences = _silences(data.get("silences", []), decoded.problems)
    return decoded


def _silences(items: Any, problems: list[str]) -> list[Silence]:
    """The silences, entry by entry: a damaged entry is dropped and named, never the rest.

    A file written before silences existed has no such section: no silences, no damage.
    """
    if not isinstance(items, list):
        problems.append(f"the silences {quote(items)} are not a JSON array: dropped")
        return []
    kept: list[Silence] = []
    for item in items:
        try:
            kept.append(Silence.from_json(item))
        except (ValueError, TypeError, KeyError, AttributeError):
            problems.append(f"silence {quote(item)} unreadable: dropped")
    return kept


def is_time(value: Any) -> bool:
    return type(value) in _NUMBER and -_TIME_BOUND < value < _TIME_BOUND


def _times(values: list[Any]) -> bool:
    for value in values:
        if value is not None and not (type(value) in _NUMBER
                                      and -_TIME_BOUND < value < _TIME_BOUND):
            return False
    return True


def records_from_rows(rows: Any, problems: list[str]) -> dict[str, TargetRecord]:
    """Records from `{target: [last_poll, absent_since, good_since, good_first_mtime,
    (incident id, opened, status, (held))]}`; the common row of 4 valid times is built
    inline. A row of 7, as files written before holds have, is an incident whose alert was
    delivered; a held one has an 8th item, true."""
    if not isinstance(rows, dict):
        problems.append("the target records are not a JSON object: all reset")
        return {}
    records: dict[str, TargetRecord] = {}
    ok, bound = _TIME_TYPES, _TIME_BOUND
    for target, row in rows.items():
        # Spelled out, not a call per field: this loop runs 100,000 times a minute.
        if type(row) is list and len(row) == 4:
            a, b, c, d = row
            if (type(a) in ok and type(b) in ok and type(c) in ok and type(d) in ok
                    and (a is None or -bound < a < bound) and (b is None or -bound < b < bound)
                    and (c is None or -bound < c < bound) and (d is None or -bound < d < bound)):
                records[target] = TargetRecord(a, b, c, d)
                continue
        records[target] = _record(target, row, problems)
    return records


def _record(target: str, row: Any, problems: list[str]) -> TargetRecord:
    if not isinstance(row, list) or len(row) not in (4, 7, 8):
        problems.append(f"{target}: record {quote(row)} is not a row of 4, 7 or 8: reset")
        return TargetRecord()
    incident = _incident(row[4:]) if len(row) > 4 else None
    if len(row) > 4 and incident is None:
        problems.append(f"{target}: incident {quote(row[4:])} unreadable: dropped")
    windows = row[:4]
    if not _times(windows):
        problems.append(f"{target}: pending windows {quote(windows)} unreadable: reset")
        windows = [None] * 4
    return TargetRecord(windows[0], windows[1], windows[2], windows[3], incident)


def _incident(part: list[Any]) -> Optional[Incident]:
    incident_id, opened, status = part[:3]
    held = part[3] if len(part) == 4 else False
    if isinstance(incident_id, str) and incident_id and is_time(opened) and isinstance(
            status, str) and status and isinstance(held, bool):
        return Incident(id=incident_id, opened=float(opened), status=status, held=held)
    return None


def _event(item: Any) -> Optional[Event]:
    if (isinstance(item, dict) and _is_count(item.get("seq")) and is_time(item.get("t"))
            and all(isinstance(item.get(key), str) for key in _EVENT_TEXT)
            and item["action"] in _ACTION_WORDS  # no engine writes another: damage
            and isinstance(item.get("detail", ""), str)):
        return Event.from_json(item)
    return None


def _events(items: Any, what: str, problems: list[str]) -> list[Event]:
    if not isinstance(items, list):
        problems.append(f"{what} unreadable: dropped")
        return []
    events = [event for event in map(_event, items) if event is not None]
    if len(events) < len(items):
        problems.append(f"{len(items) - len(events)} of {len(items)} {what} unreadable: "
                        "dropped")
    return events


def _is_count(value: Any) -> bool:
    return type(value) is int and 0 <= value < 2**53


def _channel(item: Any, problems: list[str], name: str) -> Optional[ChannelState]:
    if not (isinstance(item, dict) and _is_count(item.get("cursor", 0))
            and is_time(item.get("not_before", 0.0))):
        return None
    optional: dict[str, tuple[type, ...]] = {
        "last_error": (str,), "last_error_t": _NUMBER, "last_success_t": _NUMBER,
        "last_error_reply": (str,)}
    fields = {key: item.get(key) if isinstance(item.get(key), kind) else None
              for key, kind in optional.items()}
    return ChannelState(
        cursor=item.get("cursor", 0), not_before=float(item.get("not_before", 0.0)),
        dead=_events(item.get("dead", []), f"dead letters of channel {name}", problems),
        last_error=fields["last_error"], last_error_t=fields["last_error_t"],
        last_success_t=fields["last_success_t"], last_error_reply=fields["last_error_reply"],
        rejection=_rejection(item.get("rejection")),
    )


def _rejection(item: Any) -> Optional[Rejection]:
    """Why dead letters were set aside: for display only, so a bad one is simply left out."""
    if (isinstance(item, dict) and is_time(item.get("t"))
            and isinstance(item.get("error"), (str, type(None)))
            and isinstance(item.get("reply"), (str, type(None)))):
        return Rejection.from_json(item)
    return None


def _outbox(data: Any, decoded: Decoded, channel_names: Sequence[str],
            salvaged: bool) -> Outbox:
    problems = decoded.problems
    before = len(problems)
    if not isinstance(data, dict):
        problems.append("the outbox is unreadable")
        data = {}
    events = {event.seq: event for event in _events(data.get("events", []),
                                                    "queued messages", problems)}
    next_seq = data.get("next_seq")
    if not _is_count(next_seq) or (events and next_seq <= max(events)):
        problems.append(f"the next message number {quote(next_seq)} is unreadable")
        next_seq = max(events, default=0) + 1
    outbox = Outbox(events=[events[seq] for seq in sorted(events)], next_seq=next_seq)
    raw_channels = data.get("channels")
    if not isinstance(raw_channels, dict):
        problems.append("the channels' queue positions are unreadable")
        raw_channels = {}
    for name, item in raw_channels.items():
        channel = _channel(item, problems, name)
        if channel is None:
            problems.append(f"channel {name}: queue position {quote(item)} unreadable")
        else:
            outbox.channels[name] = channel
    history = data.get("history", [])
    outbox.history = [attempt for attempt in map(_attempt, history)
                      if attempt is not None] if isinstance(history, list) else []
    only_for = data.get("only_for", {})
    outbox.only_for = {int(seq): name for seq, name in only_for.items()
                       if seq.isdigit() and isinstance(name, str)
                       } if isinstance(only_for, dict) else {}
    if salvaged or len(problems) > before:
        resend_after_loss(outbox, decoded.records, channel_names)
    return outbox


def resend_after_loss(outbox: Outbox, records: dict[str, TargetRecord],
            channel_names: Sequence[str]) -> None:
    """After a loss in the outbox: channels without a readable position start before the
    oldest kept event, and each open incident without a queued event is announced again
    (a held one is not: its alert goes out when its hold ends)."""
    start = outbox.events[0].seq - 1 if outbox.events else outbox.next_seq - 1
    for name in channel_names:
        outbox.channels.setdefault(name, ChannelState(cursor=start))
    # Targets with a message still to go out somewhere; delivered ones are not proof enough.
    queued = {event.target for name in outbox.channels for event in outbox.pending(name)}
    for target, record in records.items():
        incident = record.incident
        if incident is not None and not incident.held and target not in queued:
            outbox.append(incident.opened, Action.ALERT, target, incident.status, incident.id)


def _attempt(item: Any) -> Optional[Attempt]:
    try:
        return Attempt.from_json(item)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None  # history is for display only: a bad entry is simply left out


_LAST_POLL: dict[str, tuple[type, ...]] = {
    "t": _NUMBER, "last_success_t": _NUMBER, "duration_s": _NUMBER, "node_error": (str,),
    "gpu_error": (str,), "nodes": (int,), "gpus": (int,), "transitions": (int,),
    "state_damage": (dict,),
}


def _last_poll(data: Any, problems: list[str]) -> dict[str, Any]:
    """The summary of the last poll: known keys of the right type (None where allowed)."""
    if not isinstance(data, dict):
        problems.append("the last poll's summary is unreadable")
        return {}
    kept: dict[str, Any] = {}
    for key, kinds in _LAST_POLL.items():
        value = data.get(key)
        if value is None or (type(value) in kinds and (kinds != _NUMBER or is_time(value))):
            kept[key] = value
        else:
            problems.append(f"last poll's {key} {quote(value)} unreadable")
    damage = kept.get("state_damage")
    if damage is not None:
        copy = damage.get("copy")
        kept["state_damage"] = {
            "t": damage.get("t"), "detail": damage.get("detail"),
            "copy": copy if isinstance(copy, str) else None,
        } if is_time(damage.get("t")) and isinstance(damage.get("detail"), str) else None
    return {key: value for key, value in kept.items() if key in data}


def quote(value: Any) -> str:
    """A short quote of a value from the file, for the log (the state holds no secret)."""
    text = repr(value) if not isinstance(value, (dict, list)) else _shape(value)
    return text if len(text) <= 120 else text[:117] + "..."


def _shape(value: Any) -> str:
    # repr() of a deeply nested container would recurse; its length says enough.
    kind = "object" if isinstance(value, dict) else "array"
    if all(not isinstance(item, (dict, list)) for item in
           (value.values() if isinstance(value, dict) else value)):
        return repr(value)
    return f"an {kind} of {len(value)}"
