"""Where a job's CPU and memory efficiency stand among its peers: the jobs of the same
partition that ended in the 30 days before it ("better than 18 % of jobs on `cpu`").

Pure: the reader of the peers is `usage.accounts_source.peer_jobs`.

The rules:
- peers: same partition, end in `[end - 30 days, end)`, not the job itself, and the figure
  measured (a peer without a CPU efficiency is no peer for the CPU rank);
- better than: the share of peers whose figure is strictly lower; a tie is neither beaten nor
  beating (ten identical jobs are each "better than 0 %");
- fewer than MINIMUM_PEERS peers: no share, "not enough jobs to compare" (a share of 5 jobs
  says more about chance than about the job);
- the job without the figure: no share, "not measured".
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Optional

PEER_WINDOW = timedelta(days=30)
MINIMUM_PEERS = 20
METRICS = ("cpu_efficiency", "memory_efficiency")


@dataclass(frozen=True)
class PeerJob:
    jobid: str
    partition: str
    end: datetime
    cpu_efficiency: Optional[float]
    memory_efficiency: Optional[float]


@dataclass(frozen=True)
class PeerRank:
    metric: str
    partition: str
    peers: int
    better_than: Optional[float]  # percent of peers, 0-100; None: not enough or not measured
    measured: bool

    def text(self) -> str:
        if not self.measured:
            return "not measured"
        if self.better_than is None:
            return "not enough jobs to compare"
        return f"better than {self.better_than:.0f} % of jobs on `{self.partition}`"


def peer_window(job: PeerJob) -> tuple[datetime, datetime]:
    return job.end - PEER_WINDOW, job.end


def peer_ranks(job: PeerJob, candidates: Iterable[PeerJob],
               minimum: int = MINIMUM_PEERS) -> dict[str, PeerRank]:
    """The job's rank for each of METRICS among `candidates` (filtered here by the rules)."""
    begin, end = peer_window(job)
    peers = [peer for peer in candidates
             if peer.partition == job.partition and begin <= peer.end < end
             and peer.jobid != job.jobid]
    ranks = {}
    for metric in METRICS:
        own: Optional[float] = getattr(job, metric)
        values = [value for value in (getattr(peer, metric) for peer in peers)
                  if value is not None]
        if own is None:
            ranks[metric] = PeerRank(metric, job.partition, len(values), None, False)
        elif len(values) < minimum:
            ranks[metric] = PeerRank(metric, job.partition, len(values), None, True)
        else:
            lower = sum(1 for value in values if value < own)
            ranks[metric] = PeerRank(metric, job.partition, len(values),
                                     100.0 * lower / len(values), True)
    return ranks
