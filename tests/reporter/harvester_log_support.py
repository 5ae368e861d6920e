"""What the harvester log parsers' tests share: the benchmark's log generator and line-by-line
reference, and the parsers as they were before issue 23 (the oracle, read from git)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks" / "bench_reporter_logs.py"
# the last commit before issue 23 changed the parsers
ORACLE_REV = "d437ddb"
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


def _git_show(path: str) -> str:
    done = subprocess.run(["git", "-C", str(ROOT), "show", f"{ORACLE_REV}:{path}"],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"the oracle needs the repository's history: {done.stderr}"
    return done.stdout


def oracle() -> Any:
    """harvester_log as of ORACLE_REV, on harvester_lines as of ORACLE_REV."""
    name = "harvester_log_before_issue_23"
    if name not in sys.modules:
        with tempfile.TemporaryDirectory() as folder:
            lines = Path(folder) / f"{name}_lines.py"
            lines.write_text(_git_show(f"{PARSERS}/harvester_lines.py"), encoding="utf-8")
            _load(lines.stem, lines)
            log = Path(folder) / f"{name}.py"
            log.write_text(_git_show(f"{PARSERS}/harvester_log.py").replace(
                "from clusterwatch.reporter.harvester_lines import", f"from {lines.stem} import"),
                encoding="utf-8")
            _load(name, log)
    return sys.modules[name]
