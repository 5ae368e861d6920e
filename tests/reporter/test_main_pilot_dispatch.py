"""Whole reporter runs for telemetry 1.6/1.7: `queue_status` with each queue's pilot dispatch
from the template-merged fixture configuration, through the built zipapp and the system
python3 and on Python 3.6 (the harvester hosts' 3.6.8), and `--image-state-max-age-s`."""

from __future__ import annotations

import calendar
import glob
import hashlib
import json
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from clusterwatch.reporter import main as reporter_main
from tests.components import unavailable
from tests.support.reporter_zipapp import SYSTEM_PYTHON

from .main_support import validate
from .pilot_dispatch_support import expected

POLICY = "NATIVE_POLICY"


def fresh_state(where: Path, updated_at: float) -> str:
    """The allocator's state for the fixture policy, written at `updated_at`; its text."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(updated_at))
    state = where / "image-allocator-state.json"
    document = json.loads(state.read_text())
    document.update(updated_at=stamp, policy_sha256=hashlib.sha256(
        (where / "image-policy.json").read_bytes()).hexdigest())
    state.write_text(json.dumps(document))
    return stamp


def args(where: Path, *more: str) -> list[str]:
    return ["--print", "--queue-config", str(where / "queue_config.json"),
            "--harvester-cfg", str(where / "absent.cfg"), "--log-dir", str(where / "no-logs"),
            "--state", str(where / "state"), *more]


def seconds(text: str) -> int:
    return calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%SZ"))


def python_3_6() -> str:
    """The harvester hosts' Python: pyenv's 3.6 on these machines (a missing one fails CI)."""
    found = sorted(glob.glob("/root/.pyenv/versions/3.6.*/bin/python3.6")) or [
        path for path in (shutil.which("python3.6"),) if path]
    if not found:
        unavailable("no Python 3.6 interpreter (pyenv's 3.6.x or python3.6 on PATH)")
    return found[-1]


@pytest.mark.parametrize("python", ["system", "3.6"])
def test_it_prints_the_exact_queue_status_through_the_built_zipapp(
        installed: Path, zipapp: Path, python: str) -> None:
    interpreter = SYSTEM_PYTHON if python == "system" else python_3_6()
    stamp = fresh_state(installed, time.time())
    done = subprocess.run([interpreter, str(zipapp), *args(installed)], capture_output=True,
                          text=True, check=False, timeout=60, env={"PATH": "/usr/bin:/bin"},
                          cwd=installed)
    assert done.returncode == 0, done.stderr
    record: dict[str, Any] = json.loads(done.stdout)
    validate(record)
    age = seconds(record["collected_at"]) - seconds(stamp)
    queues = expected(installed)
    policy = queues[POLICY]["pilot_dispatch"]
    policy["reason"] = policy["reason"].replace("(120 s ago)", f"({age} s ago)")
    policy["policy"].update(state_updated_at=stamp, state_age_s=age)
    assert record["queue_status"] == {"source": str(installed / "queue_config.json"),
                                      "queues": queues, "dropped": [], "unconfigured": []}


def run(where: Path, now: float, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch, *more: str) -> dict[str, Any]:
    monkeypatch.setattr(time, "time", lambda: now)
    assert reporter_main.main(args(where, *more)) == 0
    record: dict[str, Any] = json.loads(capsys.readouterr().out)
    validate(record)
    return record["queue_status"]["queues"][POLICY]["pilot_dispatch"]  # type: ignore[no-any-return]


def test_it_expires_the_allocator_state_after_the_age_given(
        installed: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    written = 1796173200.0
    fresh_state(installed, written)
    assert run(installed, written + 300, capsys, monkeypatch)["kind"] == "unrestricted"
    stopped = run(installed, written + 400, capsys, monkeypatch)
    assert (stopped["kind"], stopped["images"], stopped["reason"]) == (
        "unknown", [], "the image allocator's state is 400 s old (more than 360 s): the "
                       "allocator has stopped")
    tight = run(installed, written + 60, capsys, monkeypatch, "--image-state-max-age-s", "30")
    assert tight["reason"] == ("the image allocator's state is 60 s old (more than 30 s): the "
                               "allocator has stopped")


@pytest.mark.parametrize(("value", "says"), [
    ("0", "harvester-reporter: --image-state-max-age-s must be at least 1"),
    ("-5", "harvester-reporter: --image-state-max-age-s must be at least 1"),
    ("soon", "harvester-reporter: error: argument --image-state-max-age-s: invalid int "
             "value: 'soon'"),
])
def test_it_exits_64_for_a_bad_image_state_max_age(installed: Path, zipapp: Path,
                                                   value: str, says: str) -> None:
    done = subprocess.run([SYSTEM_PYTHON, str(zipapp), *args(installed),
                           "--image-state-max-age-s", value], capture_output=True, text=True,
                          check=False, timeout=60, env={"PATH": "/usr/bin:/bin"})
    assert done.returncode == 64
    assert done.stderr.splitlines()[-1] == says and "Traceback" not in done.stderr
    assert done.stdout == ""
