"""The shipped examples stay true to the code: configs load, rules parse, names exist."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from clusterwatch.monitor.usage.terminal.settings import FILE_KEYS, read_settings
from clusterwatch.watch import health
from clusterwatch.watch.config import load_config
from clusterwatch.watch.decisions import DEFAULT_THRESHOLDS
from clusterwatch.watch.state import WatchState

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_TOML = ROOT / "examples" / "watch" / "watch.toml"
RULES = ROOT / "examples" / "prometheus" / "clusterwatch-watch-rules.yml"


def test_it_loads_the_example_watch_toml_as_the_defaults(tmp_path: Path) -> None:
    shutil.copy(EXAMPLE_TOML, tmp_path / "watch.toml")
    config = load_config(tmp_path, tmp_path / "state")
    assert config.thresholds == DEFAULT_THRESHOLDS
    assert (config.prometheus_url, config.prometheus_job) == ("http://127.0.0.1:9090", "node")
    assert (config.condor_status, config.condor_timeout_s) == ("condor_status", 15.0)
    assert config.channels == ()


def test_it_loads_the_example_channels_once_uncommented(tmp_path: Path) -> None:
    text = EXAMPLE_TOML.read_text()
    start = text.index("# [[channels]]")
    channels = "\n".join(line[2:] if line.startswith("# ") else line
                         for line in text[start:].splitlines())
    (tmp_path / "watch.toml").write_text(text[:start] + channels + "\n")
    config = load_config(tmp_path, tmp_path / "state")
    assert [(c.type, c.name) for c in config.channels] == [
        ("slack", "slack"), ("alertmanager", "alertmanager"), ("webhook", "ops-bot"),
        ("email", "ops-mail")]
    assert config.channels[1].labels == {"team": "pool-ops"}
    email = config.channels[3].email
    assert email is not None
    assert (email.smtp.host, email.smtp.port, email.smtp.security, email.recipients) == (
        "smtp.example.org", 587, "starttls", ("pool-ops@example.org",))


def test_it_ships_rules_that_promtool_accepts(need_binary: Callable[[str], str]) -> None:
    promtool = need_binary("promtool")
    checked = subprocess.run([promtool, "check", "rules", str(RULES)], capture_output=True,
                             text=True, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_it_names_only_metrics_the_watch_writes() -> None:
    written = set(re.findall(r"^# TYPE (\S+) ", health.render(WatchState()), re.MULTILINE))
    used = set(re.findall(r"\b(clusterwatch_watch_[a-z_]+)", RULES.read_text()))
    assert used and used <= written


@pytest.mark.parametrize("unit", sorted((ROOT / "deploy" / "systemd").glob("*.service")))
def test_it_ships_units_that_run_the_cli_verbs_that_exist(unit: Path) -> None:
    import importlib

    from clusterwatch.cli import build_parser

    text = unit.read_text().replace("\\\n", " ")  # systemd's line continuations
    commands = [line.split("=", 1)[1].split() for line in text.splitlines()
                if line.startswith(("ExecStart=", "ExecStartPre="))]
    assert commands
    for argv in commands:
        program = Path(argv[0]).name
        assert argv[0].startswith("/opt/clusterwatch/bin/"), argv[0]  # the documented venv
        if program == "clusterwatch":
            build_parser().parse_args(argv[1:])  # exits (SystemExit) on an unknown verb
        else:
            assert program == "gunicorn", argv
            module, _, name = next(a for a in argv[1:] if not a.startswith("-")).partition(":")
            assert hasattr(importlib.import_module(module), name or "application")


def test_the_example_login_node_file_reads_as_documented() -> None:
    example = ROOT / "examples" / "usage" / "usage.toml"
    settings = read_settings({"CLUSTERWATCH_USAGE_CONFIG": str(example)})
    assert settings.monitor is not None and settings.local is None
    assert (settings.monitor.url, settings.monitor.timeout_s) == (
        "https://monitor.example.org", 30.0)
    # Its commented keys are the file's keys: uncommented, they read too.
    text = example.read_text()
    keys = re.findall(r"^# ([a-z_]+) = ", text, re.MULTILINE)
    assert keys and set(keys) <= set(FILE_KEYS)
