"""What the harvester log parsers' tests share: the benchmark's log generator and line-by-line
reference, and the parsers as they were before issue 23 (the oracle, ORACLE)."""

from __future__ import annotations

import importlib.util
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks" / "bench_reporter_logs.py"
# the last commit before issue 23 changed the parsers, and its parsers kept as text
ORACLE_REV = "d437ddb"
ORACLE = Path(__file__).resolve().parent / f"oracle_{ORACLE_REV}"
PARSERS = "src/clusterwatch/reporter"


def _load(name: str, path: Path) -> Any:
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def bench() -> Any:
    """benchmarks/bench_reporter_logs.py: the log generator and the line-by-line reference."""
    return _load("bench_reporter_logs", BENCH)


def oracle_text(name: str) -> str:
    """The text of the parser module `name` (`harvester_log.py`) as of ORACLE_REV."""
    return (ORACLE / f"{name}.txt").read_text(encoding="utf-8")


def oracle() -> Any:
    """harvester_log as of ORACLE_REV, on harvester_lines as of ORACLE_REV."""
    name = "harvester_log_before_issue_23"
    if name not in sys.modules:
        with tempfile.TemporaryDirectory() as folder:
            lines = Path(folder) / f"{name}_lines.py"
            lines.write_text(oracle_text("harvester_lines.py"), encoding="utf-8")
            _load(lines.stem, lines)
            log = Path(folder) / f"{name}.py"
            log.write_text(oracle_text("harvester_log.py").replace(
                "from clusterwatch.reporter.harvester_lines import", f"from {lines.stem} import"),
                encoding="utf-8")
            _load(name, log)
    return sys.modules[name]
