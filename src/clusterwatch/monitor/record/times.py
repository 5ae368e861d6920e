"""Times in a host record: the schema's `utc` form and back."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any, Optional

# The schema's utc type, ASCII digits only (`\d` would take other scripts' digits too).
_UTC_TEXT = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z")


def parse_utc(text: Any) -> Optional[dt.datetime]:
    """`2026-10-02T18:27:05Z` (the schema's utc type) to an aware datetime; None otherwise."""
    if not isinstance(text, str):
        return None
    if len(text) == 20 and _UTC_TEXT.fullmatch(text):
        # The form every reporter time has (~40 per record): 10x faster than strptime, with
        # the same answers (strptime accepts these digits; both refuse month 13 or second 60).
        try:
            return dt.datetime(int(text[0:4]), int(text[5:7]), int(text[8:10]),
                               int(text[11:13]), int(text[14:16]), int(text[17:19]),
                               tzinfo=dt.timezone.utc)
        except ValueError:
            return None
    try:
        value = dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        try:
            value = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.timezone.utc)
    return value.astimezone(dt.timezone.utc)


def utc_text(moment: dt.datetime) -> str:
    """An aware datetime in the schema's utc form (the inverse of `parse_utc`)."""
    return moment.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")

