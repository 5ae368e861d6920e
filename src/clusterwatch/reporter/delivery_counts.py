"""The counts of records lost on the way (dropped from a full buffer, set aside as refused),
kept in `delivery.json` until a record reports them; pure functions over plain dicts.

Counts travel in the `delivery` section of the next record built. When a record is buffered,
the counts it reports move out of `delivery.json` into that record's file; if the record is
itself dropped or set aside, its counts move back. So every loss is reported by exactly one
delivered record (twice at worst after a crash, never zero times), however many records wait
in the buffer at once.

The counts: `dropped`, `set_aside` (numbers), `reasons` (number by reason), `last_error` and
`last_error_at` (the last pass's failure and its UTC time, None after a clean pass).

Python 3.6 compatible, standard library only (see the package docstring).
"""

from typing import Any, Dict, Mapping, Optional

Counts = Dict[str, Any]


def normal_counts(data: Mapping[str, Any]) -> Counts:
    """The counts in `data`, each part that is not of its type taken as zero or None (the
    file may be damaged, and a record's section may be an error field)."""
    reasons = data.get("reasons")
    last_error = data.get("last_error")
    last_error_at = data.get("last_error_at")
    return {
        "dropped": _count(data.get("dropped")),
        "set_aside": _count(data.get("set_aside")),
        "reasons": {str(key): _count(value)
                    for key, value in (reasons.items() if isinstance(reasons, dict) else [])
                    if _count(value) > 0},
        "last_error": last_error if isinstance(last_error, str) else None,
        "last_error_at": last_error_at if isinstance(last_error_at, str) else None,
    }


def carried_counts(record: Optional[Mapping[str, Any]]) -> Counts:
    """The counts a record's `delivery` section reports (zero for anything malformed)."""
    section = record.get("delivery") if isinstance(record, Mapping) else None
    return normal_counts(section if isinstance(section, dict) else {})


def move(carried: Mapping[str, Any], counts: Counts, sign: int) -> None:
    """Add (`sign` +1) or take away (-1) `carried` from `counts`, never below zero."""
    for key in ("dropped", "set_aside"):
        counts[key] = max(0, counts[key] + sign * carried[key])
    reasons = counts["reasons"]
    for reason, number in carried["reasons"].items():
        left = reasons.get(reason, 0) + sign * number
        if left > 0:
            reasons[reason] = left
        else:
            reasons.pop(reason, None)


def count_loss(counts: Counts, kind: str, reason: str) -> None:
    """One more record lost: `kind` is `dropped` or `set_aside`."""
    counts[kind] += 1
    reasons = counts["reasons"]
    reasons[reason] = reasons.get(reason, 0) + 1


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
