"""The alarm run's summary (evaluate_alarms' last line, alarms_status' last run): a held
alarm is open, so it is counted among the open alarms, as alarms_status lists it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from clusterwatch import http_client
from clusterwatch.loopback.http_recorder import HttpRecorder, fake_slack
from clusterwatch.monitor.alarms.config import load_config
from clusterwatch.monitor.alarms.operations import add_silence
from clusterwatch.monitor.alarms.run import run_alarms
from clusterwatch.notify.channel_config import build_channels
from tests.monitor.alarms.support import put, ssl_failing

pytestmark = pytest.mark.django_db
NOW = time.time()


@pytest.fixture
def slack() -> Iterator[HttpRecorder]:
    with fake_slack() as server:
        yield server


def test_a_held_alarm_is_counted_open(tmp_path: Path, slack: HttpRecorder) -> None:
    secret = tmp_path / "slack_webhook"
    secret.write_text(f"{slack.url}/services/T0/B0/secret\n")
    secret.chmod(0o600)
    path = tmp_path / "alarms.toml"
    path.write_text('[[channels]]\ntype = "slack"\nwebhook_file = "slack_webhook"\n'
                    "timeout_s = 2\n")
    config = load_config(path, 300.0)
    channels = build_channels(config.channels, http_client.post, "ClusterwatchAlarm")
    add_silence(["key:pandaharvester01"], duration_s=3600, until=None, comment="renewal",
                author="alice", now=NOW)
    put("pandaharvester01", ssl_failing(collected_at=NOW))
    put("pandaharvester02", ssl_failing(collected_at=NOW))
    result = run_alarms(config, channels, clock=lambda: NOW + 10)
    summary = result.summary()
    assert (summary["raised"], summary["held"], summary["open"]) == (2, 1, 2)
    assert len(slack.requests) == 1  # the unsilenced one alone
