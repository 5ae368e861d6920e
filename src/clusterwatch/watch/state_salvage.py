"""Reading what is still whole in a state file that is no longer valid JSON.

A torn write, a disk fault or a slip in a hand edit usually damages a few bytes. The file's
layout is known (`{"version":..,"targets":{..},"outbox":{"next_seq":..,"events":[..],
"channels":{..},..},"last_poll":{..}}`), so each section is found by its key and read on
its own; in a section that does not read whole, each entry that does is kept. The caller
validates every kept entry as it validates a clean file's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from typing import Any, Optional

# With the original script's sections (state_original), so its file is salvaged as well.
TOP_SECTIONS = ("version", "targets", "outbox", "last_poll", "pending", "retry_after",
                "silences")
OUTBOX_SECTIONS = ("next_seq", "events", "channels", "history", "only_for")

_DECODER = json.JSONDecoder()
_SPACE_CHARS = frozenset(" \t\n\r")
_CLOSER = {"{": "}", "[": "]"}


def salvage(raw: bytes) -> dict[str, Any]:
    """The top-level sections that could be read, some of them in part."""
    text = raw.decode("utf-8", "replace")
    found: dict[str, Any] = {}
    for name, segment in _sections(text, TOP_SECTIONS).items():
        if name == "outbox":
            value = _whole(segment)
            if not isinstance(value, dict):
                value = {key: _value(part) for key, part in
                         _sections(segment, OUTBOX_SECTIONS).items()}
        else:
            value = _value(segment)
        if value is not None:
            found[name] = value
    return found


def _sections(text: str, names: Sequence[str]) -> dict[str, str]:
    """Each named key's value text, up to the next named key.

    Keys are found by `"name":`. Inside a JSON string every quote is escaped, so that
    sequence only occurs where a key is.
    """
    pattern = re.compile('"(' + "|".join(map(re.escape, names)) + r')"\s*:')
    starts: list[tuple[int, int, str]] = []
    seen: set[str] = set()
    for match in pattern.finditer(text):
        if match.group(1) not in seen:
            seen.add(match.group(1))
            starts.append((match.start(), match.end(), match.group(1)))
    ends = [start for start, _, _ in starts[1:]] + [len(text)]
    return {name: text[value_start:end] for (_, value_start, name), end in zip(starts, ends)}


def _value(segment: str) -> Any:
    """The value `segment` starts with; a container that does not read whole, in part."""
    value = _whole(segment)
    if value is not None:
        return value
    start = _skip(segment, 0)
    opener = segment[start:start + 1]
    if opener == "{":
        return dict(_entries(segment, start))
    if opener == "[":
        return [value for _, value in _entries(segment, start)]
    return None


def _whole(segment: str) -> Any:
    try:
        value, _ = _DECODER.raw_decode(segment, _skip(segment, 0))
    except (ValueError, RecursionError):
        return None
    return value


def _entries(text: str, start: int) -> Iterator[tuple[Optional[str], Any]]:
    """(key, value) of the object, or (None, element) of the array, that starts at `start`.

    Past a damaged entry, reading resumes after the next comma from which a whole entry
    reads, followed by a comma or the closing bracket. A key is always followed by a colon,
    so resuming never takes a key for an array element or a value for an object's key.
    """
    opener = text[start]
    in_object = opener == "{"
    closer = _CLOSER[opener]
    position = start + 1
    while position < len(text):
        entry = _entry(text, position, in_object, closer)
        if entry is not None:
            key, value, position = entry
            yield key, value
            if text[position] == closer:
                return
            position += 1  # the comma
            continue
        comma = text.find(",", position + 1)
        if comma < 0:
            return
        position = comma + 1


def _entry(text: str, position: int, in_object: bool,
           closer: str) -> Optional[tuple[Optional[str], Any, int]]:
    """One whole entry at `position`, and where its following comma or closer is."""
    try:
        key: Optional[str] = None
        position = _skip(text, position)
        if in_object:
            key, position = _DECODER.raw_decode(text, position)
            if not isinstance(key, str):
                return None
            position = _skip(text, position)
            if text[position:position + 1] != ":":
                return None
            position = _skip(text, position + 1)
        value, position = _DECODER.raw_decode(text, position)
        position = _skip(text, position)
    except (ValueError, RecursionError):
        return None
    if text[position:position + 1] not in (",", closer):
        return None
    return key, value, position


def _skip(text: str, position: int) -> int:
    while position < len(text) and text[position] in _SPACE_CHARS:
        position += 1
    return position
