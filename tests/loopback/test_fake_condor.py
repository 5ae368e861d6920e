from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from clusterwatch.loopback.fake_condor import recorded_argv, write_fake_condor_status


def test_it_prints_the_machines_file_and_records_the_arguments(tmp_path: Path) -> None:
    machines = tmp_path / "machines"
    machines.write_text("a.example.org\na.example.org\nb.example.org\n")
    script = write_fake_condor_status(tmp_path / "bin", machines)
    assert recorded_argv(tmp_path / "bin") == []

    first = subprocess.run([script, "-af", "Machine"], capture_output=True, check=True)
    machines.write_text("c.example.org\n")
    second = subprocess.run([script, "-constraint", 'State == "Idle"'], capture_output=True)

    assert first.stdout == b"a.example.org\na.example.org\nb.example.org\n"
    assert (second.returncode, second.stdout) == (0, b"c.example.org\n")
    assert recorded_argv(tmp_path / "bin") == [
        ["-af", "Machine"],
        ["-constraint", 'State == "Idle"'],
    ]


def test_it_fails_with_the_given_exit_code(tmp_path: Path) -> None:
    machines = tmp_path / "machines"
    machines.write_text("")
    script = write_fake_condor_status(tmp_path, machines, exit_code=1)
    assert subprocess.run([script], capture_output=True).returncode == 1


def test_a_killed_slow_run_releases_the_callers_pipes(tmp_path: Path) -> None:
    machines = tmp_path / "machines"
    machines.write_text("a.example.org\n")
    script = write_fake_condor_status(tmp_path, machines, sleep=10)
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        subprocess.run([script, "-af", "Machine"], capture_output=True, timeout=0.5)
    assert time.monotonic() - started < 5


def test_it_rejects_impossible_parameters(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        write_fake_condor_status(tmp_path, tmp_path / "m", exit_code=256)
    with pytest.raises(ValueError):
        write_fake_condor_status(tmp_path, tmp_path / "m", sleep=-1)
