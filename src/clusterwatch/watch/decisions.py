"""The decision rules of the pool watch: pure functions over plain data, no I/O.

One `TargetRecord` per expected target carries the pending windows and the open incident
between polls; `decide` applies one classified observation to it and returns the transition,
if any. The poll, the replay and the exercise all call this same function.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from typing import Optional

from clusterwatch.notify.incident import WATCH_ID_BYTES, Action, incident_id


class Observation(enum.Enum):
    """A target's class at one poll; the value is the word events, replays and tables show.

    Nodes are present, silent, missing or unknown; GPU files fresh, aging, stale, missing or
    unknown.
    """

    PRESENT = "present"
    # In the answer, but the collector has not heard from it for longer than node_silence_s
    # (its LastHeardFrom): absent since it was last heard, as if its ads had expired then.
    SILENT = "silent"
    MISSING = "missing"
    UNKNOWN = "unknown"  # failed queries and invalid rows alike
    FRESH = "fresh"
    AGING = "aging"
    STALE = "stale"


@dataclass(frozen=True)
class Thresholds:
    """The spec's constants; configurable so integration tests can run in seconds."""

    fail_s: float = 900.0  # observed absence, or file age, that warrants an alert
    recover_s: float = 600.0  # length of the clean window that closes an incident
    max_gap_s: float = 180.0  # a longer pause between polls breaks the pending windows
    fresh_s: float = 120.0  # oldest file age that counts as "being written"
    # A node whose ads carry LastHeardFrom is silent when the collector has not heard from
    # it for longer than this: twice HTCondor's default UPDATE_INTERVAL (300 s), so one
    # late or lost update is no silence.
    node_silence_s: float = 600.0


DEFAULT_THRESHOLDS = Thresholds()


@dataclass
class Incident:
    id: str
    opened: float  # detection time of the alert
    # The word of the observation that raised it (missing or stale), as the state file keeps
    # it: a string, since the original's state files are read too.
    status: str
    # Its alert was held back (a silence or a maintenance window covered the target when it
    # opened) and not yet queued: the poll queues it once the hold ends, and a held
    # incident that closes first closes silently (holds.py).
    held: bool = False


@dataclass
class TargetRecord:
    """What one target remembers between polls."""

    last_poll: Optional[float] = None
    absent_since: Optional[float] = None  # first omission of the current absence window
    good_since: Optional[float] = None  # first valid good poll of the recovery window
    good_first_mtime: Optional[float] = None  # GPU: mtime seen at good_since
    incident: Optional[Incident] = None


@dataclass(frozen=True)
class Decision:
    t: float
    target: str
    action: Action
    status: Observation  # the classified observation that triggered it
    incident: str


def classify_mtime(now: float, mtime: float,
                   thresholds: Thresholds = DEFAULT_THRESHOLDS) -> Observation:
    """Classify a GPU file's mtime seen at poll time `now` (spec: "a valid mtime")."""
    if not math.isfinite(mtime) or mtime <= 0 or mtime > now:
        return Observation.UNKNOWN
    age = now - mtime
    if age >= thresholds.fail_s:
        return Observation.STALE
    if age <= thresholds.fresh_s:
        return Observation.FRESH
    return Observation.AGING


def classify_heard(now: float, last_heard: float, collector_now: float,
                   thresholds: Thresholds = DEFAULT_THRESHOLDS
                   ) -> tuple[Observation, Optional[float]]:
    """(present or silent, when it was last heard on the poll's clock) for a node in a
    successful answer whose ads carry `LastHeardFrom`.

    `last_heard` is the node's newest LastHeardFrom, `collector_now` the newest of the
    whole answer that is not after the poll (condor.collector_now). Both are the
    collector's clock, so the silence is measured on it, never past the poll time: a
    collector clock behind the watch's makes no node silent, and one ahead (a LastHeardFrom
    in the future) makes a silence look shorter, so neither alerts sooner than the plain
    rule. A silence is only ever counted against nodes the collector still hears from.
    """
    reference = min(collector_now, now)
    silence = reference - min(last_heard, reference)
    if silence > thresholds.node_silence_s:
        return Observation.SILENT, now - silence
    return Observation.PRESENT, None


def decide(
    record: TargetRecord,
    target: str,
    now: float,
    observation: Observation,
    mtime: Optional[float] = None,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
    heard_at: Optional[float] = None,
) -> Optional[Decision]:
    """Apply one classified observation of `target` at poll time `now`; mutate `record`.

    `mtime` is a GPU file's mtime for fresh, aging and stale; `heard_at` a silent node's
    last hearing on the poll's clock (`classify_heard`).
    """
    previous = record.last_poll
    record.last_poll = now
    if (
        observation is Observation.UNKNOWN
        or (previous is not None and (now < previous or now - previous > thresholds.max_gap_s))
    ):
        record.absent_since = None
        _clear_recovery(record)
    if observation is Observation.UNKNOWN:
        return None

    if observation in (Observation.MISSING, Observation.STALE, Observation.SILENT):
        _clear_recovery(record)
        if record.incident is not None:
            return None
        if observation is Observation.STALE:
            record.absent_since = None
            return _open(record, target, now, Observation.STALE)
        if record.absent_since is None:
            record.absent_since = now
            if observation is Observation.SILENT and heard_at is not None:
                record.absent_since = _absent_from(now, heard_at, thresholds)
        if now - record.absent_since >= thresholds.fail_s:
            record.absent_since = None
            return _open(record, target, now, observation)
        return None

    # present, fresh or aging: the target is there, so no absence window is pending.
    record.absent_since = None
    if observation is Observation.AGING or record.incident is None:
        _clear_recovery(record)
        return None
    if record.good_since is None:
        record.good_since = now
        record.good_first_mtime = mtime
        return None
    if now - record.good_since < thresholds.recover_s:
        return None
    if observation is Observation.FRESH and not _mtime_advanced(record.good_first_mtime, mtime):
        return None  # a fresh age without a newer write: keep the window open
    return _close(record, target, now, observation)


def _absent_from(now: float, heard_at: float, thresholds: Thresholds) -> float:
    """Where a silent node's absence window starts: when it was last heard.

    Watching every minute, the watch first sees a silence at most max_gap_s after it passed
    node_silence_s. A longer one at first sight is a silence the watch did not see pass (it
    was not polling) or an absurd LastHeardFrom: it counts from node_silence_s + max_gap_s
    before this poll, so the watch sees the node silent for itself (2 minutes with the
    defaults) before it alerts, and one bad value cannot alert on the poll that reads it.
    """
    return min(now, max(heard_at, now - thresholds.node_silence_s - thresholds.max_gap_s))


def _mtime_advanced(first: Optional[float], last: Optional[float]) -> bool:
    return first is not None and last is not None and last > first


def _clear_recovery(record: TargetRecord) -> None:
    record.good_since = None
    record.good_first_mtime = None


def _open(record: TargetRecord, target: str, now: float, status: Observation) -> Decision:
    incident = Incident(id=incident_id(target, now, digest_bytes=WATCH_ID_BYTES), opened=now,
                        status=status.value)
    record.incident = incident
    return Decision(t=now, target=target, action=Action.ALERT, status=status,
                    incident=incident.id)


def _close(record: TargetRecord, target: str, now: float, status: Observation) -> Decision:
    assert record.incident is not None
    closed = record.incident
    record.incident = None
    _clear_recovery(record)
    return Decision(t=now, target=target, action=Action.RECOVER, status=status,
                    incident=closed.id)

