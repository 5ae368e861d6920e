"""Scratch paths are compared by whole path components."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterwatch.jobs.scratch import ScratchPaths


@pytest.mark.parametrize(("path", "expected"), [
    ("/scratch", True),
    ("/scratch/alice/run1/out.h5", True),
    ("/scratch/alice/tmp.dat (deleted)", True),
    ("/scratch2/alice/out.h5", False),
    ("/scratchy", False),
    ("/home/alice/scratch/x", False),
    ("socket:[12345]", False),
    ("", False),
])
def test_it_matches_whole_components(path: str, expected: bool) -> None:
    assert ScratchPaths(["/scratch/"]).contains(path) is expected


def test_it_matches_the_target_of_a_symlinked_scratch_path(tmp_path: Path) -> None:
    real = tmp_path / "lustre" / "scratch"
    real.mkdir(parents=True)
    (tmp_path / "scratch").symlink_to(real)
    scratch = ScratchPaths([str(tmp_path / "scratch")])
    assert scratch.contains(f"{real}/alice/file")  # /proc shows the resolved path
    assert scratch.contains(f"{tmp_path}/scratch/alice/file")


def test_it_rejects_a_relative_path() -> None:
    with pytest.raises(ValueError, match="absolute"):
        ScratchPaths(["scratch"])


def test_it_is_false_when_nothing_is_configured() -> None:
    assert not ScratchPaths([])
