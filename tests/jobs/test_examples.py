"""The exporter's shipped files stay true to the code: rules and scrape config load, every
name they and the docs use exists, the systemd unit runs a verb that exists."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Callable

from prometheus_client import CollectorRegistry

from clusterwatch.cli import build_parser
from clusterwatch.jobs.exporter import JobsCollector

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "examples" / "prometheus" / "jobs-rules.yml"
SCRAPE = ROOT / "examples" / "prometheus" / "jobs-scrape.yml"
DOCS = ROOT / "docs" / "jobs.md"
UNIT = ROOT / "deploy" / "systemd" / "clusterwatch-jobs-exporter.service"


def exported_names(tmp_path: Path) -> set[str]:
    registry = CollectorRegistry()
    registry.register(JobsCollector(tmp_path, tmp_path, nvml=None))
    return {family.name + ("_total" if family.type == "counter" else "")
            for family in registry.collect()}


def test_it_ships_rules_that_promtool_accepts(need_binary: Callable[[str], str]) -> None:
    checked = subprocess.run([need_binary("promtool"), "check", "rules", str(RULES)],
                             capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_it_ships_a_scrape_config_that_promtool_accepts(
        need_binary: Callable[[str], str]) -> None:
    checked = subprocess.run([need_binary("promtool"), "check", "config", str(SCRAPE)],
                             capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_it_uses_only_exported_metrics_in_the_rules(tmp_path: Path) -> None:
    # Metric names, not the names of recorded series (level:metric:operations).
    used = set(re.findall(r"(?<!:)\b(jobs_[a-z_]+)\b(?!:)", RULES.read_text()))
    assert used and used <= exported_names(tmp_path)


def test_it_documents_exactly_the_exported_metrics(tmp_path: Path) -> None:
    text = DOCS.read_text()
    tables = text[text.index("\n## Metrics"):text.index("\n## From the original")]
    documented = set(re.findall(r"^\| `(jobs_[a-z_]+)", tables, re.MULTILINE))
    assert documented == exported_names(tmp_path)


def test_it_ships_a_unit_that_runs_a_verb_that_exists() -> None:
    exec_start = next(line for line in UNIT.read_text().splitlines()
                      if line.startswith("ExecStart="))
    args = build_parser().parse_args(exec_start.split()[1:])
    assert (args.part, args.verb, args.listen) == ("jobs", "serve", ":9306")
