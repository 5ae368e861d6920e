"""An event: one alert or recovery transition, as queued and delivered."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from clusterwatch.notify.incident import Action


@dataclass(frozen=True)
class Event:
    seq: int  # position in the outbox; increases by one per event, never reused
    t: float  # detection time, epoch seconds
    action: Action
    target: str  # "<check>:<name>", e.g. node:worker.example.org or gpu:192.0.2.10:9100
    status: str  # the classified observation that triggered it
    incident: str  # incident id shared by an alert and its recovery
    # Optional human sentence about the target, starting with its name, e.g.
    # "pandaharvester01 /data: 93.1 % used, 6.9 GiB left of 100.0 GiB". Left out of the
    # JSON when empty, so outboxes saved before it existed load unchanged.
    detail: str = ""

    @property
    def check(self) -> str:
        return self.target.partition(":")[0]

    @property
    def name(self) -> str:
        return self.target.partition(":")[2]

    def line(self) -> str:
        """One human line, e.g. `2026-10-02 14:16:00Z ALERT gpu:192.0.2.10:9100 (stale)`.

        With a detail, the detail says what the target and status would: `2026-10-02
        18:27:05Z ALERT panda_unreachable pandaharvester01: every fetch failed ...`.
        """
        if self.detail:
            return (f"{format_utc(self.t)} {self.action.value.upper()} {self.check} {self.detail} "
                    f"(incident {self.incident})")
        return (
            f"{format_utc(self.t)} {self.action.value.upper()} {self.target} ({self.status}) "
            f"incident {self.incident}"
        )

    def to_json(self) -> dict[str, Any]:
        # Spelled out: dataclasses.asdict deep-copies every field, and a large queue is
        # encoded several times per poll.
        data: dict[str, Any] = {"seq": self.seq, "t": self.t, "action": self.action.value,
                                "target": self.target, "status": self.status,
                                "incident": self.incident}
        if self.detail:
            data["detail"] = self.detail
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Event:
        """Raises ValueError for an action word that no engine writes."""
        return cls(
            seq=int(data["seq"]), t=float(data["t"]), action=Action(data["action"]),
            target=str(data["target"]), status=str(data["status"]),
            incident=str(data["incident"]), detail=str(data.get("detail") or ""),
        )


def format_utc(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(t))


def format_rfc3339(t: float) -> str:
    """RFC 3339 in UTC with milliseconds, as Alertmanager's API expects."""
    whole = int(t)
    millis = round((t - whole) * 1000)
    if millis == 1000:
        whole, millis = whole + 1, 0
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{millis:03d}Z"
