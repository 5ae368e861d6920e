"""The exposition of a fixture node is byte for byte what the exporter wrote before its
scrapes were made faster (issue 23): kept files in tests/jobs/golden/, written by the
exporter as it was at that time.

Two collections of every kind of job (tests/jobs/fake_jobs.py), the second after the node
changed (a process exited and one started, I/O grew, threads came): the first collection
opens every file, the second reads the files it holds, remembers processes and sums I/O of
the departed. Only the collection's duration, which differs at every run, is masked. The
real /proc and cgroup v1 path is held by benchmarks/bench_jobs_scrape.py, which stops unless
the exporter gathers exactly the psutil way's figures and series.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from clusterwatch.jobs import exposition
from tests.jobs.fake_jobs import every_kind_of_job
from tests.jobs.fake_tree import ALICE, Tree, user_name

GOLDEN = Path(__file__).parent / "golden"
_DURATION = re.compile(rb"^(jobs_exporter_collect_duration_seconds) \S+$", re.MULTILINE)


def masked(text: bytes) -> bytes:
    return _DURATION.sub(rb"\1 DURATION", text)


def scrapes(tree: Tree, fmt: str) -> bytes:
    """The two collections' expositions, one after the other."""
    collector = every_kind_of_job(tree)
    first = collector.exposition(fmt)
    tree.io(101, (10**12 + 4096, 9, 30, 1_000_002))
    for tid in (1101, 1102):
        (tree.proc / "101" / "task" / str(tid)).mkdir()
    (tree.proc / "101" / "statm").write_text("9 123999 4 10 0 123999 0\n")
    (tree.proc / "102").rename(tree.root / "gone_102")  # exited
    (tree.cgroup / "freezer" / "slurm" / f"uid_{ALICE}" / "job_42" / "step_1" / "task_0"
     / "cgroup.procs").write_text("105\n")
    tree.process(105, threads=2, rss_pages=7, io=(1, 2, 3, 4))
    second = collector.exposition(fmt)
    return masked(first) + b"# --- second collection ---\n" + masked(second)


@pytest.mark.parametrize("fmt", exposition.FORMATS)
def test_the_exposition_is_what_it_was(tree: Tree, fmt: str) -> None:
    if user_name(ALICE) != str(ALICE) or user_name(0) != "root":
        pytest.skip("the kept expositions name uid 4242 by its number and uid 0 root")
    ours = scrapes(tree, fmt)
    kept = GOLDEN / f"every_kind_of_job.{fmt}"  # written once, before issue 23's changes
    assert ours == kept.read_bytes()
