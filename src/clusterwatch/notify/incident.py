"""The words both alert engines use: what a transition is called, and an incident's id.

The pool watch and the monitor's alarms queue their transitions in the same outbox and send
them through the same channels, so a channel, a status view or a receiver reads one
vocabulary whichever engine spoke.
"""

from __future__ import annotations

import enum
import hashlib


class Action(enum.Enum):
    """What a transition is; the value is the word outboxes store and lines print (upper)."""

    ALERT = "alert"  # a condition started: an incident opens
    RECOVER = "recover"  # the condition ended: the incident closes


# Digest lengths of the two engines' incident ids. The ids are stored (state files, the
# alarm table) and were sent to channels and receivers, so each length is part of that
# engine's contract and must never change.
WATCH_ID_BYTES = 4  # the pool watch: 8 hex digits
ALARM_ID_BYTES = 6  # the monitor's alarms: 12 hex digits


def incident_id(target: str, opened: float, *, digest_bytes: int) -> str:
    """Short, deterministic id so repeated deliveries of one incident can be told apart.

    `opened` is hashed as its repr: a float detection time, as both engines pass it.
    """
    key = f"{target}\0{opened!r}".encode()
    return hashlib.blake2b(key, digest_size=digest_bytes).hexdigest()
