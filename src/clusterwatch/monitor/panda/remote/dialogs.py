"""The remote record's `dialogs` section: the harvester's messages to the PanDA server over
24 hours, per module and per kind of message.

Harvester (HSF/harvester d561b72f, `db_interface.add_dialog_message`, and panda-common's
LogWrapper) forwards a log message at WARNING or above; it rewrites any level it does not know,
CRITICAL included, to INFO, so `harvester_dialogs` holds WARNING and ERROR only, and a
CRITICAL never reaches it. A row at another level (a harvester set to forward less severe
messages) is counted in `other_levels`, not shown. Messages are cut to 500 characters by the
harvester; `diagid` is its own counter, and a reused one replaces the earlier row.

A kind is a message with its numbers set aside: the identifier (`<method> <token>`) and the
message, as a log line reads, each number (`12`, `3.5`, `0x7f3a`) written `#`. A number is a
run of digits that is not part of a word, so names such as `nid001234` stay whole; the
harvester's queue names are kept verbatim whatever they hold (`CERN-PROD-1`), and each kind
says which of them it names (`queues`): a queue page shows a kind that names its queue or
names none of them.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Sequence
from typing import Any, Optional

from clusterwatch.monitor.panda.remote.times import latest_per, server_time, utc_text
from clusterwatch.monitor.panda.server_rows import DialogRow, Rows, SourceFailed

WINDOW = dt.timedelta(hours=24)
LEVELS = ("ERROR", "WARNING")
KINDS_KEPT = 100  # most frequent first; the rest are counted in kinds_left_out
NUMBER_MARK = "#"
_NUMBER = re.compile(r"(?<![A-Za-z0-9_])(?:0x[0-9a-fA-F]+|\d+(?:\.\d+)*)(?![A-Za-z0-9_])")
NO_MODULE = "(null)"


def dialogs_section(harvester_id: str, rows: Rows[DialogRow], queues: Iterable[str],
                    now: dt.datetime) -> dict[str, Any]:
    """`dialogs` for the 24 hours before `now` (rows dated after `now` included, counted in
    `dated_ahead`); `queues` are the harvester's queue names."""
    if isinstance(rows, SourceFailed):
        return {"error": f"harvester_dialogs: {rows.reason}"}
    now = server_time(now)
    start = now - WINDOW
    names = _QueueNames(queues)
    other_levels: dict[str, int] = {}
    kept: list[tuple[str, DialogRow]] = []
    mine = (row for row in rows if row["harvester_id"] == harvester_id)
    for row in latest_per(mine, lambda row: row["diagid"],
                          lambda row: row["creationtime"]).values():
        if server_time(row["creationtime"]) <= start:
            continue
        level = (row["messagelevel"] or "").strip().upper()
        if level in LEVELS:
            kept.append((level, row))
        else:
            name = level or "(none)"
            other_levels[name] = other_levels.get(name, 0) + 1
    kept.sort(key=lambda pair: (server_time(pair[1]["creationtime"]), pair[1]["diagid"]))
    modules: dict[str, dict[str, Any]] = {}
    kinds: dict[tuple[str, str, str], dict[str, Any]] = {}
    for level, row in kept:  # oldest first: the last one seen is the latest
        module = row["modulename"] or NO_MODULE
        message = _message(level, row)
        entry = modules.setdefault(module, {"count": 0, "by_level": {}, "latest": None})
        entry["count"] += 1
        entry["by_level"][level] = entry["by_level"].get(level, 0) + 1
        entry["latest"] = message
        text = _line(row)
        pattern = names.kind_of(text)
        kind = kinds.setdefault((module, level, pattern), {
            "module": module, "level": level, "kind": pattern,
            "queues": names.named_in(text), "count": 0, "first": message["at"]})
        kind["count"] += 1
        kind["latest"] = message
    # Most messages first; among equals the most recent (both sorts are stable).
    ordered = sorted(kinds.values(), key=lambda kind: kind["latest"]["at"], reverse=True)
    ordered.sort(key=lambda kind: -kind["count"])
    left_out = ordered[KINDS_KEPT:]
    return {
        "since": utc_text(start), "window_s": int(WINDOW.total_seconds()),
        "messages": len(kept),
        "dated_ahead": sum(1 for _, row in kept if server_time(row["creationtime"]) > now),
        "other_levels": other_levels,
        "modules": dict(sorted(modules.items())),
        "kinds": ordered[:KINDS_KEPT],
        "kinds_left_out": len(left_out),
        "messages_left_out": sum(kind["count"] for kind in left_out),
    }


def _message(level: str, row: DialogRow) -> dict[str, Any]:
    return {"at": utc_text(row["creationtime"]), "level": level,
            "identifier": row["identifier"], "message": row["diagmessage"] or ""}


def _line(row: DialogRow) -> str:
    """The message as harvester logged it: identifier, then message."""
    return " ".join(part for part in (row["identifier"], row["diagmessage"]) if part)


class _QueueNames:
    """Finds the harvester's queue names in a message, whole names only."""

    def __init__(self, queues: Iterable[str]) -> None:
        names = sorted({name for name in queues if name}, key=lambda name: (-len(name), name))
        # Not inside a longer name: no name character before, none after (a full stop ends
        # a sentence, unless a name character follows it).
        self._pattern: Optional[re.Pattern[str]] = re.compile(
            r"(?<![\w.-])(" + "|".join(map(re.escape, names)) + r")(?![\w-]|\.\w)"
        ) if names else None

    def _split(self, text: str) -> Sequence[str]:
        """Text and names alternating: even items text, odd items queue names."""
        return [text] if self._pattern is None else self._pattern.split(text)

    def kind_of(self, text: str) -> str:
        parts = self._split(text)
        return "".join(part if index % 2 else _NUMBER.sub(NUMBER_MARK, part)
                       for index, part in enumerate(parts))

    def named_in(self, text: str) -> list[str]:
        return sorted(set(self._split(text)[1::2]))
