"""job_pids through held cgroup directories (cgroup_procs) against job_pids by path with
nothing held (the oracle, tests/jobs/pids_both_ways.py), collection after collection on
the same directories: real cgroup v1 directories of this kernel changed between
collections in the ways that could fool held directories or link counts (a cgroup removed
and made again under the same name, a subdirectory made in a leaf, cgroups removed,
directories the exporter may not list), and a fixture tree on a filesystem whose link
counts are wrong."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Callable

import pytest

from clusterwatch.loopback.cgroup_lab import CgroupLab
from tests.jobs.fake_tree import Tree, v1_slurm_job
from tests.jobs.pids_both_ways import BothWays

REPOSITORY = Path(__file__).parents[2]


class Node:
    """A CgroupLab in freezer only, with sleeping processes, and the directories a test
    makes itself (removed at the end, after the processes are gone)."""

    def __init__(self, lab: CgroupLab) -> None:
        self.lab = lab
        self.top = lab.cgroup_root / "freezer" / lab.name
        self.made: list[Path] = []

    def job(self, jobid: int, *steps: str) -> Path:
        for step in steps:
            self.lab.task_dir(os.getuid(), jobid, step)
        return self.top / f"slurm/uid_{os.getuid()}/job_{jobid}"

    def spawn(self, directory: Path) -> int:
        relative = str(directory.relative_to(self.top))
        return self.lab.spawn(["sleep", "600"], relative).pid

    def mkdir(self, directory: Path) -> None:
        directory.mkdir()
        self.made.append(directory)

    def move(self, pid: int, directory: Path) -> None:
        (directory / "cgroup.procs").write_text(str(pid))

    def rmdir(self, directory: Path) -> None:
        """Remove the cgroup, its processes moved to the lab's top first."""
        for pid in (directory / "cgroup.procs").read_text().split():
            self.move(int(pid), self.top)
        directory.rmdir()

    def close(self) -> None:
        for process in self.lab.processes:
            process.kill()
            process.wait()
        for directory in reversed(self.made):
            if directory.is_dir():
                directory.chmod(0o755)
                directory.rmdir()


@pytest.fixture
def node() -> Iterator[Node]:
    if os.geteuid() != 0:
        pytest.skip("needs root to create cgroups")
    try:
        lab = CgroupLab(controllers=("freezer",)).__enter__()
    except (FileNotFoundError, PermissionError) as exc:
        pytest.skip(f"no writable cgroup v1 freezer: {exc}")
    made = Node(lab)
    try:
        yield made
    finally:
        made.close()
        lab.close()


def same_both_ways(both: BothWays, job_dirs: list[Path]) -> list[list[Any]]:
    """One collection each way; they must agree. The jobs' [pids, steps, complete]."""
    collected = both.collect([str(directory) for directory in job_dirs])
    assert collected["held"] == collected["by_path"]
    jobs: list[list[Any]] = collected["held"]["jobs"]
    return jobs


def listings(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The directories listed from now on."""
    listed: list[str] = []
    scandir = os.scandir

    def counting(path: Any) -> Any:
        listed.append(str(path))
        return scandir(path)

    monkeypatch.setattr(os, "scandir", counting)
    return listed


def test_it_finds_what_the_paths_find_through_every_change(
        node: Node, monkeypatch: pytest.MonkeyPatch) -> None:
    first = node.job(1001, "0", "1")
    second = node.job(1002, "0")
    empty = node.job(1003)
    node.mkdir(empty)
    a, b = node.spawn(first / "step_0/task_0"), node.spawn(first / "step_0/task_0")
    c = node.spawn(first / "step_1/task_0")
    d = node.spawn(second / "step_0/task_0")
    jobs = [first, second, empty]
    both = BothWays()
    assert same_both_ways(both, jobs) == [
        [sorted([a, b, c]), 2, True], [[d], 1, True], [[], 0, True]]
    listed = listings(monkeypatch)
    same_both_ways(both, jobs)
    # Nine directories by path; held, the five with subdirectories only: the three tasks
    # and the job without steps are leaves (their filesystem learnt from their parents).
    assert len(listed) == 5 + 9, listed

    leaf = second / "step_0/task_0"
    node.rmdir(leaf)  # removed and made again: the held directory is the old cgroup's
    node.mkdir(leaf)
    node.move(d, leaf)
    assert same_both_ways(both, jobs)[1] == [[d], 1, True]
    assert same_both_ways(both, jobs)[1] == [[d], 1, True]

    inner = first / "step_1/task_0/inner"  # a subdirectory in a leaf
    node.mkdir(inner)
    node.move(c, inner)
    assert same_both_ways(both, jobs)[0] == [sorted([a, b, c]), 2, True]
    e = node.spawn(inner)
    assert same_both_ways(both, jobs)[0] == [sorted([a, b, c, e]), 2, True]
    for pid in (c, e):
        node.move(pid, inner.parent)
    node.rmdir(inner)  # a leaf again
    assert same_both_ways(both, jobs)[0] == [sorted([a, b, c, e]), 2, True]

    node.rmdir(leaf)  # removed for good, and its step
    node.rmdir(second / "step_0")
    assert same_both_ways(both, jobs)[1] == [[], 0, True]
    node.mkdir(empty / "step_0")  # the job without steps gets one
    f = node.spawn(empty / "step_0")
    assert same_both_ways(both, jobs)[2] == [[f], 1, True]
    assert same_both_ways(both, jobs)[2] == [[f], 1, True]


PROGRAM = [sys.executable, "-m", "tests.jobs.pids_both_ways", "2"]


def test_what_it_may_not_read_is_counted_as_by_path(
        node: Node, need_binary: Callable[[str], str]) -> None:
    """Without the capabilities that bypass permissions: a leaf it may enter but not list
    (listed, refused and counted as by path, though its link count says no subdirectory),
    a step directory it may not enter, a cgroup.procs it may not read."""
    jobs = [node.job(jobid, "0") for jobid in (2001, 2002, 2003, 2004)]
    for job in jobs:
        node.spawn(job / "step_0/task_0")
    (jobs[0] / "step_0/task_0").chmod(0o311)
    (jobs[1] / "step_0").chmod(0)
    (jobs[2] / "step_0/task_0/cgroup.procs").chmod(0)
    command = [need_binary("setpriv"), "--bounding-set=-dac_override,-dac_read_search",
               *PROGRAM, *map(str, jobs)]
    try:
        result = subprocess.run(command, cwd=REPOSITORY, capture_output=True, text=True,
                                timeout=60, check=False)
    finally:
        (jobs[0] / "step_0/task_0").chmod(0o755)
        (jobs[1] / "step_0").chmod(0o755)
        (jobs[2] / "step_0/task_0/cgroup.procs").chmod(0o644)
    assert result.returncode == 0, result.stderr[-2000:]
    for collection in json.loads(result.stdout):
        assert collection["held"] == collection["by_path"]
        assert [complete for _, _, complete in collection["held"]["jobs"]] == [
            False, False, False, True]
    assert collection["held"]["errors"]["permission_denied"] == 2 * 4  # 1 + 2 + 1 a time


def test_it_lists_every_directory_where_link_counts_are_wrong(
        tree: Tree, monkeypatch: pytest.MonkeyPatch) -> None:
    """A filesystem that says 2 links for every directory, whatever it holds, is never
    taken at its word: every directory is listed."""
    job_dir = v1_slurm_job(
        tree, "42", tasks={"step_0/task_0": [101], "step_1/task_0": [102]})["freezer"]
    real_fstat = os.fstat

    def two_links(fd: int) -> os.stat_result:
        info = real_fstat(fd)
        if not stat.S_ISDIR(info.st_mode):
            return info
        fields = list(info)
        fields[3] = 2  # st_nlink
        return os.stat_result(fields)

    monkeypatch.setattr(os, "fstat", two_links)
    both = BothWays()
    for _ in range(3):
        assert same_both_ways(both, [job_dir]) == [[[101, 102], 2, True]]
