"""Inventories: one name a line."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterwatch.errors import ConfigError
from clusterwatch.watch.inventory import read_inventory


@pytest.mark.parametrize("space", [" ", "\t", "\u00a0", "\u2003", "\u3000"])
def test_it_refuses_a_name_with_any_kind_of_space_inside(tmp_path: Path, space: str) -> None:
    path = tmp_path / "expected_nodes"
    path.write_text(f"worker1.example.org\nworker2{space}example.org\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=":2: one name a line"):
        read_inventory(path)


def test_it_keeps_file_order_and_drops_duplicates_blanks_and_comments(tmp_path: Path) -> None:
    path = tmp_path / "gpu_instances"
    path.write_text("# GPUs\n192.0.2.11:9100\n\n  192.0.2.10:9100  \n192.0.2.11:9100\n")
    assert read_inventory(path) == ["192.0.2.11:9100", "192.0.2.10:9100"]


def test_it_ignores_the_undefined_placeholder_of_condor_status() -> None:
    from clusterwatch.watch.condor import parse_machines

    assert parse_machines("a.example.org\nundefined\na.example.org\n") == {"a.example.org"}
