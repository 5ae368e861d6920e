"""What the buffer and delivery tests share: a settable clock, the token, one cron run."""

from __future__ import annotations

import json
from typing import Any, Optional

from clusterwatch.reporter.buffer import Buffer
from clusterwatch.reporter.delivery import deliver
from tests.support.tls import MonitorServer

TOKEN = "tok-3f9a1c7e5b2d"
T0 = 1_790_000_000.0


class Clock:
    def __init__(self, t: float = T0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t

    def tick(self, seconds: float = 300.0) -> None:
        self.t += seconds


def run_once(buffer: Buffer, clock: Clock, seq: int, url: str,
             ca_bundle: Optional[str]) -> dict[str, Any]:
    """What main does each cron run: build the record with its delivery section, buffer
    it, deliver the buffer."""
    clock.tick()
    buffer.add({"seq": seq, "delivery": buffer.section()})
    return deliver(buffer, url, TOKEN, ca_bundle=ca_bundle, timeout=5, now=clock)


def seqs(server: MonitorServer) -> list[int]:
    return [json.loads(post.body)["seq"] for post in server.posts]
