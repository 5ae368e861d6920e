"""`clusterwatch monitor --help` through the installed console script: one line for every
management command the monitor has (each module under monitor/site/management/commands and
monitor/usage/management/commands), none for a command that does not exist, answered even
when the monitor's settings are wrong (it reads none)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import clusterwatch.monitor
from clusterwatch.monitor.site.command_list import DJANGO_COMMANDS, LINE_WIDTH, MONITOR_COMMANDS

CLUSTERWATCH = str(Path(sys.executable).with_name("clusterwatch"))
PACKAGE = Path(clusterwatch.monitor.__file__).parent
COMMAND_DIRS = (PACKAGE / "site" / "management" / "commands",
                PACKAGE / "usage" / "management" / "commands")


def monitor(*arguments: str, **environ: str) -> subprocess.CompletedProcess[str]:
    env = {name: value for name, value in os.environ.items()
           if not name.startswith("CLUSTERWATCH_") and name != "DJANGO_SETTINGS_MODULE"}
    return subprocess.run([CLUSTERWATCH, "monitor", *arguments], env={**env, **environ},
                          capture_output=True, text=True, timeout=120, check=False)


def management_commands() -> set[str]:
    found = {path.stem for folder in COMMAND_DIRS for path in folder.glob("*.py")
             if not path.name.startswith("_")}
    assert {"remote_harvester_report", "job_usage", "create_slurmdb_view"} <= found
    return found


def test_it_names_every_management_command_on_a_line_of_its_own() -> None:
    done = monitor("--help", CLUSTERWATCH_DATABASE_URL="oracle://not-read/at-all")
    assert (done.returncode, done.stderr) == (0, "")
    lines = done.stdout.splitlines()
    listed = [line.split()[0] for line in lines if line.startswith("  ") and line.split()
              and line.split()[0].replace("_", "").isalpha() and len(line.split()) > 1]
    for name in management_commands():
        entries = [line for line in lines if line.startswith(f"  {name} ")]
        assert len(entries) == 1, name
        assert len(entries[0].split(None, 1)[1]) > 10, f"{name} has no summary"
    assert {name for name, _ in MONITOR_COMMANDS} == management_commands()  # none stale
    assert set(listed) >= management_commands() | {name for name, _ in DJANGO_COMMANDS}
    assert all(len(line) <= LINE_WIDTH for line in lines)


def test_the_django_commands_it_names_exist(tmp_path: Path) -> None:
    done = monitor("help", "--commands", CLUSTERWATCH_DATA_DIR=str(tmp_path))
    assert done.returncode == 0, done.stderr
    offered = set(done.stdout.split())
    assert {name for name, _ in DJANGO_COMMANDS} - {"help"} <= offered  # help lists, is not listed
    assert management_commands() <= offered
