"""Reading the state file of the original pool-watch script, so its users switch in place.

The default paths are the original's, so the first poll of a switched host finds the
original's `state.json`:

    {"targets": {"gpu:192.0.2.10:9100": {"last": T, "bad": T, "good": T,
                                         "first_stamp": MTIME, "alerted": true}, ...},
     "pending": ["2026-10-02 14:16:00Z ALERT gpu:192.0.2.10:9100 (stale)", ...],
     "retry_after": T}

`last` is the target's previous poll, `bad` the start of its absence window, `good` and
`first_stamp` the start of its recovery window and the file mtime seen then, `alerted` says
an incident is open (true, or the time of its alert); `pending` holds the lines Slack had
not acknowledged, oldest first, and `retry_after` the time before which Slack must not be
asked again. They become this program's records, queued events (in order, each once) and
each channel's back-off; the next save writes the new format. A value that does not read is
dropped and named, exactly as in a damaged file of the new format (state_codec).
"""

from __future__ import annotations

import calendar
import re
import time
from collections.abc import Sequence
from typing import Any, Optional

from clusterwatch.notify.incident import WATCH_ID_BYTES, Action, incident_id
from clusterwatch.notify.outbox import ChannelState, Outbox
from clusterwatch.watch.decisions import Incident, Observation, TargetRecord
from clusterwatch.watch.inventory import GPU_PREFIX
from clusterwatch.watch.state_codec import Decoded, is_time, quote, resend_after_loss

SECTIONS = ("targets", "pending", "retry_after")
_WINDOWS = ("last", "bad", "good", "first_stamp")
# The original's line; the incident id is this program's addition, taken when a line has one.
_LINE = re.compile(
    r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)Z (ALERT|RECOVER(?:ED|Y)?) (\S+) "
    r"\(([a-z_]+)\)(?: incident ([0-9A-Za-z_-]{1,64}))?"
)
_NEW_SECTIONS = ("version", "outbox", "last_poll")


def is_original(data: dict[str, Any], salvaged: bool) -> bool:
    """Whether parsed (or salvaged) sections are the original's rather than this format's.

    A salvaged file of this format may have lost its version, so only the original's own
    sections, or a target written as an object, tell it from one.
    """
    if any(key in data for key in _NEW_SECTIONS):
        return False
    if "pending" in data or "retry_after" in data:
        return True
    targets = data.get("targets")
    if isinstance(targets, dict) and any(isinstance(v, dict) for v in targets.values()):
        return True
    return not salvaged and "targets" in data


def decode_original(
    data: dict[str, Any], channel_names: Sequence[str], now: float, salvaged: bool = False
) -> Decoded:
    """This program's state from the original's sections; `now` dates an incident whose
    alert time the file does not give."""
    decoded = Decoded(original=True)
    problems = decoded.problems
    if salvaged:
        problems.extend(
            f"the original's {key} could not be read" for key in SECTIONS if key not in data
        )
    before = len(problems)
    lines = _lines(data.get("pending", []), problems)
    lines_lost = salvaged or len(problems) > before
    outbox = Outbox()
    open_alerts: dict[str, tuple[str, float, str]] = {}  # target: (id, opened, status)
    seen: set[tuple[float, Action, str, str]] = set()
    for t, action, target, status, given_id in lines:
        # The same line twice is one transition (an alert fires once per incident): sending
        # it again would repeat the alert, or announce a recovery of no incident.
        if (t, action, target, status) in seen:
            continue
        seen.add((t, action, target, status))
        if action is Action.ALERT:
            event_id = given_id or incident_id(target, t, digest_bytes=WATCH_ID_BYTES)
            open_alerts[target] = (event_id, t, status)
        else:
            opened = open_alerts.pop(target, None)
            event_id = given_id or (
                opened[0] if opened else incident_id(target, t, digest_bytes=WATCH_ID_BYTES)
            )
        outbox.append(t, action, target, status, event_id)
    not_before = _retry_after(data.get("retry_after"), problems)
    for name in channel_names:
        # Every configured channel starts before the lines: none of them has heard of them.
        outbox.channels[name] = ChannelState(cursor=0, not_before=not_before)
    targets = data.get("targets", {})
    if not isinstance(targets, dict):
        problems.append("the target records are not a JSON object: all reset")
        targets = {}
    for target, entry in targets.items():
        decoded.records[target] = _record(target, entry, open_alerts.get(target), now, problems)
    if lines_lost:
        resend_after_loss(outbox, decoded.records, channel_names)
    decoded.outbox = outbox
    return decoded


def _lines(items: Any,
           problems: list[str]) -> list[tuple[float, Action, str, str, Optional[str]]]:
    if not isinstance(items, list):
        problems.append(f"the undelivered lines {quote(items)} are unreadable: dropped")
        return []
    lines = []
    for item in items:
        line = _line(item)
        if line is None:
            problems.append(f"undelivered line {quote(item)} unreadable: dropped")
        else:
            lines.append(line)
    return lines


def _line(item: Any) -> Optional[tuple[float, Action, str, str, Optional[str]]]:
    match = _LINE.fullmatch(item.strip()) if isinstance(item, str) else None
    if match is None:
        return None
    stamp, word, target, status, given_id = match.groups()
    try:
        t = float(calendar.timegm(time.strptime(stamp, "%Y-%m-%d %H:%M:%S")))
    except ValueError:  # a 13th month, a 61st minute
        return None
    return t, Action.ALERT if word == "ALERT" else Action.RECOVER, target, status, given_id


def _retry_after(value: Any, problems: list[str]) -> float:
    if value is None:
        return 0.0
    if not is_time(value):
        problems.append(f"retry_after {quote(value)} unreadable: ignored")
        return 0.0
    return float(value)


def _record(
    target: str,
    entry: Any,
    alert: Optional[tuple[str, float, str]],
    now: float,
    problems: list[str],
) -> TargetRecord:
    if not isinstance(entry, dict):
        problems.append(f"{target}: record {quote(entry)} is not an object: reset")
        return TargetRecord()
    windows = [entry.get(key) for key in _WINDOWS]
    if not all(value is None or is_time(value) for value in windows):
        problems.append(f"{target}: pending windows {quote(windows)} unreadable: reset")
        windows = [None] * 4
    record = TargetRecord(*windows)
    alerted = entry.get("alerted")
    if alerted is None or alerted is False:
        return record
    if alerted is not True and not is_time(alerted):
        problems.append(f"{target}: alerted {quote(alerted)} unreadable: incident dropped")
        return record
    if alert is None:
        # Its alert went out before the switch: dated by the file where it can be.
        opened = (
            float(alerted)
            if alerted is not True
            else (float(windows[0]) if windows[0] is not None else now)
        )
        status = (Observation.STALE if target.startswith(GPU_PREFIX)
                  else Observation.MISSING).value
        alert = (incident_id(target, opened, digest_bytes=WATCH_ID_BYTES), opened, status)
    record.incident = Incident(id=alert[0], opened=alert[1], status=alert[2])
    return record
