"""A queue's `pilot_dispatch` reading (telemetry 1.6/1.7), typed: which payload images its
pilots run, read by the host reporter from the queue's submit template
(`clusterwatch.reporter.pilot_dispatch`; docs/reporter.md "Pilot dispatch and image policy").

It sits in each `queue_status.queues.<queue>` entry. Records from before 1.6, and the remote
harvester's (whose templates no reporter reads), have none: the reading is then None, never a
guessed kind. Field names are the schema's (a test holds the two together).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any, Optional

from clusterwatch.monitor.record.reading import integer, is_obj, obj, text, texts
from clusterwatch.monitor.record.times import parse_utc

KINDS = ("image_bound", "per_job", "unrestricted", "unknown")


@dataclass(frozen=True)
class PolicyEvidence:
    """The image policy a native template names, and the allocator state it was held to."""

    file: Optional[str] = None
    sha256: Optional[str] = None
    policy: Optional[str] = None
    state_file: Optional[str] = None
    state_updated_at: Optional[dt.datetime] = None
    state_age_s: Optional[int] = None


@dataclass(frozen=True)
class PilotDispatch:
    kind: str = "unknown"  # a kind outside the four reads as unknown
    images: tuple[str, ...] = ()
    template: Optional[str] = None
    sha256: Optional[str] = None
    reason: Optional[str] = None
    bootstrap_images: tuple[str, ...] = ()
    policy: Optional[PolicyEvidence] = None


def _policy(value: Any) -> Optional[PolicyEvidence]:
    if not is_obj(value):
        return None
    return PolicyEvidence(
        file=text(value.get("file")), sha256=text(value.get("sha256")),
        policy=text(value.get("policy")), state_file=text(value.get("state_file")),
        state_updated_at=parse_utc(value.get("state_updated_at")),
        state_age_s=integer(value.get("state_age_s")))


def pilot_dispatch(value: Any) -> Optional[PilotDispatch]:
    if not is_obj(value):
        return None
    found = obj(value)
    kind = found.get("kind")
    return PilotDispatch(
        kind=kind if kind in KINDS else "unknown", images=texts(found.get("images")),
        template=text(found.get("template")), sha256=text(found.get("sha256")),
        reason=text(found.get("reason")),
        bootstrap_images=texts(found.get("bootstrap_images")),
        policy=_policy(found.get("policy")))
