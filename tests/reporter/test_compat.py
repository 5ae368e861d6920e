"""The reporter runs on the harvester hosts' Python 3.6.8 with the standard library only."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPORTER = Path(__file__).resolve().parents[2] / "src" / "clusterwatch" / "reporter"
SOURCES = sorted(REPORTER.glob("*.py"))


def test_it_has_sources_to_check() -> None:
    assert len(SOURCES) >= 8


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.name)
def test_it_parses_as_python_3_6(path: Path) -> None:
    ast.parse(path.read_text(encoding="utf-8"), filename=str(path), feature_version=(3, 6))


def test_it_uses_nothing_newer_than_python_3_6_by_vermin() -> None:
    vermin = Path(sys.executable).with_name("vermin")  # the dev extra's console script
    assert vermin.exists(), "vermin is not installed: pip install -e '.[dev]'"
    done = subprocess.run(
        [str(vermin), "-t=3.6-", "--violations", "--no-tips", "--eval-annotations",
         str(REPORTER)],
        capture_output=True, text=True, check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.name)
def test_it_imports_only_the_standard_library_and_itself(path: Path) -> None:
    stdlib = getattr(sys, "stdlib_module_names", None)
    if stdlib is None:
        pytest.skip("sys.stdlib_module_names needs Python >= 3.10")
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        for name in names:
            top = name.split(".")[0]
            if top == "clusterwatch":
                assert name == "clusterwatch.reporter" or name.startswith(
                    "clusterwatch.reporter."), f"{path.name} imports {name}"
            else:
                assert top in stdlib, f"{path.name} imports {name}, not in the standard library"
