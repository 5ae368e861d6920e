"""Peer ranks from kept summaries: a few hundred seeded jobs, each job's CPU and memory rank
held to an independent computation (the peers chosen by raw SQL rows and counted by sorting
and bisecting); ties, too few peers, a job without a figure, the 30-day window's edges."""

from __future__ import annotations

import bisect
from datetime import datetime, timedelta, timezone
from typing import Any, Optional

import pytest

from clusterwatch.monitor.usage.accounts_source import kept_peer_job, peer_jobs
from clusterwatch.monitor.usage.analysis.peer_rank import MINIMUM_PEERS, peer_ranks
from tests.monitor.usage.accounts_support import kept, raw_rows, seeded_jobs

UTC = timezone.utc
pytestmark = pytest.mark.django_db


def independent(jobid: str, metric: str) -> Optional[float]:
    """The share in percent of peers strictly below the job, by bisecting the sorted figures;
    None under the minimum or for a job without the figure."""
    rows = raw_rows()
    [job] = [row for row in rows if row.jobid == jobid]
    own = getattr(job, metric)
    values = sorted(getattr(row, metric) for row in rows
                    if row.document["partition"] == job.document["partition"]
                    and row.jobid != jobid and getattr(row, metric) is not None
                    and job.end - timedelta(days=30) <= row.end < job.end)
    if own is None or len(values) < MINIMUM_PEERS:
        return None
    return 100.0 * bisect.bisect_left(values, own) / len(values)


def test_the_ranks_of_a_few_hundred_kept_jobs_agree_with_an_independent_computation() -> None:
    seeded_jobs(300, seed=2022, begin=datetime(2026, 1, 1, tzinfo=UTC), days=60)
    enough = 0
    for jobid in [str(number) for number in range(0, 300, 7)]:
        job = kept_peer_job(jobid)
        assert job is not None
        for metric, rank in peer_ranks(job, peer_jobs(job)).items():
            want = independent(jobid, metric)
            if want is None:
                assert rank.better_than is None
            else:
                enough += 1
                assert rank.better_than == pytest.approx(want)
                assert rank.text() == (f"better than {want:.0f} % of jobs on "
                                       f"`{job.partition}`")
    assert enough > 40  # most jobs had enough peers: the comparison was not vacuous


def test_ties_are_neither_beaten_nor_beating() -> None:
    end = datetime(2026, 3, 31, tzinfo=UTC)
    for number in range(30):
        kept(f"p{number}", end=end - timedelta(hours=number + 1), elapsed_s=60,
             cpu_efficiency=0.5 if number < 20 else 0.2, memory_efficiency=0.5)
    kept("me", end=end, elapsed_s=60, cpu_efficiency=0.5, memory_efficiency=0.5)
    job = kept_peer_job("me")
    assert job is not None
    ranks = peer_ranks(job, peer_jobs(job))
    # 10 of 30 below 0.5, 20 equal: better than a third; memory all equal: better than none.
    assert ranks["cpu_efficiency"].better_than == pytest.approx(100 / 3)
    assert ranks["cpu_efficiency"].text() == "better than 33 % of jobs on `cpu`"
    assert ranks["memory_efficiency"].better_than == 0.0
    assert ranks["cpu_efficiency"].peers == 30


def test_too_few_peers_the_window_and_other_partitions() -> None:
    end = datetime(2026, 3, 31, tzinfo=UTC)
    for number in range(MINIMUM_PEERS - 1):
        kept(f"p{number}", end=end - timedelta(days=29), elapsed_s=60, cpu_efficiency=0.1,
             memory_efficiency=None if number == 0 else 0.1)
    kept("old", end=end - timedelta(days=30, seconds=1), elapsed_s=60, cpu_efficiency=0.1)
    kept("later", end=end + timedelta(seconds=1), elapsed_s=60, cpu_efficiency=0.1)
    kept("same-end", end=end, elapsed_s=60, cpu_efficiency=0.1)  # not before it: no peer
    for number in range(30):
        kept(f"g{number}", partition="gpu", end=end - timedelta(hours=1), elapsed_s=60)
    kept("me", end=end, elapsed_s=60, cpu_efficiency=0.9, memory_efficiency=0.9)
    job = kept_peer_job("me")
    assert job is not None
    ranks = peer_ranks(job, peer_jobs(job))
    assert ranks["cpu_efficiency"].peers == MINIMUM_PEERS - 1
    assert ranks["cpu_efficiency"].text() == "not enough jobs to compare"
    assert ranks["memory_efficiency"].peers == MINIMUM_PEERS - 2  # one peer unmeasured
    # One more in the window (its first second counts): enough, and beaten by the job.
    kept("edge", end=end - timedelta(days=30), elapsed_s=60, cpu_efficiency=0.1)
    ranks = peer_ranks(job, peer_jobs(job))
    assert ranks["cpu_efficiency"].peers == MINIMUM_PEERS
    assert ranks["cpu_efficiency"].text() == "better than 100 % of jobs on `cpu`"


def test_a_job_without_a_figure_is_not_ranked_for_it() -> None:
    end = datetime(2026, 3, 31, tzinfo=UTC)
    for number in range(25):
        kept(f"p{number}", end=end - timedelta(hours=1), elapsed_s=60)
    kept("me", end=end, elapsed_s=60, cpu_efficiency=None, memory_efficiency=0.6)
    job = kept_peer_job("me")
    assert job is not None
    ranks = peer_ranks(job, peer_jobs(job))
    assert ranks["cpu_efficiency"].text() == "not measured"
    assert ranks["memory_efficiency"].better_than == 100.0
    assert kept_peer_job("unknown") is None


def test_the_peers_are_read_in_one_query(django_assert_num_queries: Any) -> None:
    seeded_jobs(50, seed=6, begin=datetime(2026, 3, 1, tzinfo=UTC), days=10)
    job = kept_peer_job("49")
    assert job is not None
    with django_assert_num_queries(1):
        peer_jobs(job)
