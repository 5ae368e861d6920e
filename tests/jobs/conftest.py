from __future__ import annotations

from pathlib import Path

import pytest

from tests.jobs.fake_tree import Tree


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    tree = Tree(tmp_path)
    tree.cgroup.mkdir()
    tree.proc.mkdir()
    return tree
