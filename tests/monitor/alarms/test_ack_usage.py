"""`alarm_ack` through the console script: a comment that is too long or holds control
characters is a usage error (exit 2, one line) that acknowledges nothing, as a missing
comment is, not "no such alarm" (exit 1)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from clusterwatch.loopback.monitor_server import private_database
from tests.support.monitor_console import CLUSTERWATCH, console_environ

TARGET = "panda_unreachable:pandaharvester01"
OPEN_ALARM = f"""
import datetime as dt
from clusterwatch.monitor.core.models import Alarm
Alarm.objects.create(target="{TARGET}", kind="panda_unreachable", key="pandaharvester01",
                     incident="0123abcd4567", status="SSLError", detail="down",
                     opened_at=dt.datetime.now(dt.timezone.utc))
"""
Run = subprocess.CompletedProcess[str]


@pytest.fixture
def monitor(tmp_path: Path, migrated_database: dict[str, str]) -> Iterator[dict[str, str]]:
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    with private_database(data, template=migrated_database) as database:
        yield console_environ(data, {**database, "CLUSTERWATCH_SECRET_KEY": "k" * 50})


def cwm(env: dict[str, str], *arguments: str) -> Run:
    done = subprocess.run([CLUSTERWATCH, "monitor", *arguments], env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    assert "Traceback" not in done.stderr, done.stderr
    return done


@pytest.mark.integration
def test_a_bad_acknowledgement_comment_is_a_usage_error(monitor: dict[str, str]) -> None:
    assert cwm(monitor, "shell", "-c", OPEN_ALARM).returncode == 0
    for comment, words in (("x" * 501, "longer than 500"),
                           ("on it \x1b[2J", "printable")):
        done = cwm(monitor, "alarm_ack", TARGET, "--comment", comment)
        assert done.returncode == 2, (done.stdout, done.stderr)
        assert done.stdout == "" and done.stderr.count("\n") == 1 and words in done.stderr
    (alarm,) = json.loads(cwm(monitor, "alarms_status", "--json").stdout)["open_alarms"]
    assert alarm["acknowledged"] is None
