"""A job's peer ranks as every output shows them: the job page, the end-of-job email (text and
HTML), `/mail/<jobid>` and the API's `peer_ranks` key all call `peer_ranks_of`, so they say
the same thing (docs/usage.md, "The job's document").

The ranks are computed when a report is shown, never kept: the peers of a job change as the
other jobs of its partition are kept, and the kept summary is the job's own figures only.
One query per job (accounts_source.peer_jobs), whatever the number of peers; the rules are
analysis/peer_rank.py's.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any, Optional, TypedDict

from clusterwatch.monitor.usage.accounts_source import peer_jobs
from clusterwatch.monitor.usage.analysis.peer_rank import (
    METRICS,
    MINIMUM_PEERS,
    PEER_WINDOW,
    PeerJob,
    PeerRank,
    peer_ranks,
)

LABELS = {"cpu_efficiency": "CPU efficiency", "memory_efficiency": "Memory efficiency"}


class RankDocument(TypedDict):
    peers: int  # the peers that have the figure
    better_than_percent: Optional[float]  # 0-100; null: too few peers, or not measured
    measured: bool  # the job itself has the figure
    text: str  # "better than 18 % of jobs on `cpu`", "not enough jobs to compare", ...


class PeerRanksDocument(TypedDict):
    partition: str
    window_days: int
    minimum_peers: int
    cpu_efficiency: RankDocument
    memory_efficiency: RankDocument


def peer_ranks_of(document: Mapping[str, Any]) -> Optional[PeerRanksDocument]:
    """The job's ranks among its partition's jobs of the 30 days before its end; None when
    they cannot be computed (a running job, one without an end or a partition)."""
    job = peer_job(document)
    if job is None:
        return None
    ranks = peer_ranks(job, peer_jobs(job))
    cpu, memory = (_rank(ranks[metric]) for metric in METRICS)
    return PeerRanksDocument(partition=job.partition, window_days=PEER_WINDOW.days,
                             minimum_peers=MINIMUM_PEERS, cpu_efficiency=cpu,
                             memory_efficiency=memory)


def with_peer_ranks(document: Mapping[str, Any]) -> dict[str, Any]:
    """The API's answer: the document and its `peer_ranks` (a copy: the kept one is left
    as it was)."""
    return {**document, "peer_ranks": peer_ranks_of(document)}


def rank_lines(ranks: Optional[PeerRanksDocument]) -> list[tuple[str, str]]:
    """(label, text) per metric, as the page and the email list them; [] without ranks."""
    if ranks is None:
        return []
    return [(LABELS["cpu_efficiency"], ranks["cpu_efficiency"]["text"]),
            (LABELS["memory_efficiency"], ranks["memory_efficiency"]["text"])]


def peer_job(document: Mapping[str, Any]) -> Optional[PeerJob]:
    partition, end = document.get("partition"), _moment(document.get("end"))
    if document.get("running") or end is None or not isinstance(partition, str) \
            or not partition:
        return None
    return PeerJob(str(document.get("jobid", "")), partition, end,
                   _fraction(document.get("cpu_efficiency")),
                   _fraction(document.get("memory_efficiency")))


def _rank(rank: PeerRank) -> RankDocument:
    return RankDocument(peers=rank.peers, better_than_percent=rank.better_than,
                        measured=rank.measured, text=rank.text())


def _fraction(value: object) -> Optional[float]:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _moment(text: object) -> Optional[datetime]:
    if not isinstance(text, str):
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)
