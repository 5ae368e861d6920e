"""Parsers for the values `sacct --parsable2` prints, one per kind of field.

Slurm writes sizes with binary unit letters (K, M, G, T, P = 1024^n; a bare number is
bytes for MaxRSS and MiB for ReqMem), durations as [D-][HH:]MM:SS[.mmm], times in the
format of SLURM_TIME_FORMAT (we ask for `%s`, seconds since the epoch, and read ISO 8601 too)
and "Unknown" or "None" where a time does not exist yet. Each parser raises ValueError on
anything else, so the caller can say which field of which line was unreadable.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone, tzinfo
from typing import Optional

_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4, "P": 1024**5}
_SIZE = re.compile(r"([0-9]+(?:\.[0-9]+)?)([KMGTP]?)")
# Before Slurm 21.08 ReqMem ended with c (per CPU) or n (per node).
_REQ_MEM = re.compile(r"([0-9]+(?:\.[0-9]+)?)([KMGTP]?)([cn]?)")
_DURATION = re.compile(r"(?:([0-9]+)-)?(?:([0-9]+):)?([0-9]+):([0-9]+)(?:\.([0-9]+))?")
_NO_TIME = frozenset({"", "Unknown", "None"})
_NO_LIMIT = frozenset({"UNLIMITED", "Partition_Limit", "INVALID", ""})
_COUNT = re.compile(r"[0-9]{1,10}")  # Slurm's counts are 32-bit
# Beyond these no sacct writes a value, and floats and dates overflow: refused as unreadable.
_MAX_BYTES = 2**63
_MAX_SECONDS = 2**53
_LAST_YEAR = 9998  # a date must leave room for the arithmetic done on it (datetime ends at 9999)


def parse_size(text: str, bare_unit: str = "") -> Optional[int]:
    """Bytes of a size like `1234K` or `8G`; None for an empty field.

    `bare_unit` is the unit of a number without a letter (MaxRSS: bytes; ReqMem: M).
    """
    if text == "":
        return None
    match = _SIZE.fullmatch(text)
    if match is None:
        raise ValueError(f"not a size: {text[:40]!r}")
    number, unit = match.groups()
    return _bytes(float(number) * _UNITS[unit or bare_unit], text)


def parse_count(text: str) -> int:
    """A count (CPUs, nodes, GPUs); 0 for an empty field."""
    if text == "":
        return 0
    if not _COUNT.fullmatch(text):
        raise ValueError(f"not a count: {text[:40]!r}")
    return int(text)


def _bytes(size: float, text: str) -> int:
    if not 0 <= size < _MAX_BYTES:  # also infinity, from a number too long for a float
        raise ValueError(f"not a size: {text[:40]!r}")
    return round(size)


def parse_req_mem(text: str, cpus: int, nodes: int) -> Optional[int]:
    """Bytes the job asked for in total. `4000M` and `8G` are totals (Slurm >= 21.08);
    older Slurm wrote `4000Mc` (per CPU) and `4000Mn` (per node)."""
    if text in ("", "0", "0n", "0c"):
        return None
    match = _REQ_MEM.fullmatch(text)
    if match is None:
        raise ValueError(f"not a memory request: {text[:40]!r}")
    number, unit, per = match.groups()
    size = float(number) * _UNITS[unit or "M"]
    if per == "c":
        size *= max(cpus, 1)
    elif per == "n":
        size *= max(nodes, 1)
    return _bytes(size, text)


def parse_tres(text: str) -> dict[str, str]:
    """`billing=2,cpu=2,mem=8G,node=1,gres/gpu=1` -> {"cpu": "2", "mem": "8G", ...}."""
    tres: dict[str, str] = {}
    for item in text.split(","):
        name, sep, value = item.partition("=")
        if sep:
            tres[name.strip()] = value.strip()
    return tres


def tres_gpus(tres: dict[str, str]) -> int:
    """GPUs in a TRES list: `gres/gpu=N`, else the sum of typed `gres/gpu:<model>=N`.

    Slurm lists both the plain and the typed counts for the same GPUs, so adding them all
    would count each GPU twice.
    """
    if "gres/gpu" in tres:
        return parse_count(tres["gres/gpu"])
    return sum(parse_count(value) for name, value in tres.items()
               if name.startswith("gres/gpu:"))


def parse_duration(text: str) -> Optional[float]:
    """Seconds of `1-02:03:04`, `02:03:04`, `03:04`, `03:04.567`; None for an empty field."""
    if text == "":
        return None
    match = _DURATION.fullmatch(text)
    if match is None:
        raise ValueError(f"not a duration: {text[:40]!r}")
    days, hours, minutes, seconds, fraction = match.groups()
    total = (int(days or 0) * 86400 + int(hours or 0) * 3600 + int(minutes) * 60
             + int(seconds))
    if total >= _MAX_SECONDS:
        raise ValueError(f"not a duration: {text[:40]!r}")
    return total + (float("0." + fraction) if fraction else 0.0)


def parse_time_limit(text: str) -> Optional[int]:
    """Seconds of a Timelimit; None when unlimited, left to the partition, or unknown."""
    if text in _NO_LIMIT:
        return None
    seconds = parse_duration(text)
    return None if seconds is None else round(seconds)


def parse_time(text: str, zone: Optional[tzinfo] = None) -> Optional[datetime]:
    """An aware time; None for Unknown/None (not started, still running).

    Seconds since the epoch are zone-free; an ISO time without offset is in `zone`
    (default: this machine's local zone, which is what sacct used to write it).
    """
    if text in _NO_TIME:
        return None
    try:
        if text.isdigit():
            moment = datetime.fromtimestamp(int(text), timezone.utc)
        else:
            moment = datetime.fromisoformat(text)
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=zone) if zone is not None else moment.astimezone()
            moment = moment.astimezone(timezone.utc)
    except (ValueError, OverflowError, OSError):
        raise ValueError(f"not a time: {text[:40]!r}") from None
    if moment.year > _LAST_YEAR:
        raise ValueError(f"not a time: {text[:40]!r}")
    return moment


def parse_state(text: str) -> tuple[str, str]:
    """(`CANCELLED`, `by 1000`) from `CANCELLED by 1000`; (`COMPLETED`, ``) from `COMPLETED`.

    Some versions end a state with `+` (e.g. `CANCELLED+`, the name truncated): dropped.
    """
    word, _, reason = text.strip().partition(" ")
    if not word:
        raise ValueError("empty state")
    return word.rstrip("+").upper(), reason.strip()
